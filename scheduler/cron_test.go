package scheduler_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
)

// Three real robfig/cron instances run a job every second, each wrapped
// with CronOnce under one name: each tick runs on one instance at most.
func TestCronOnceRunsEachTickOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	log := newRunLog(time.Second)
	// "@every 1s" ticks on whole seconds on every instance.
	log.t0 = time.Now().Truncate(time.Second)
	var crons []*cron.Cron
	for i := range 3 {
		name := fmt.Sprintf("instance-%d", i)
		l := scheduler.NewLocker(locktest.NewOn(t, srv))
		c := cron.New()
		_, err := c.AddJob("@every 1s", cron.NewChain(scheduler.CronOnce(l, "cron-every-second")).Then(
			cron.FuncJob(func() { log.record(name) })))
		require.NoError(t, err)
		crons = append(crons, c)
	}
	for _, c := range crons {
		c.Start()
	}
	t.Cleanup(func() {
		for _, c := range crons {
			<-c.Stop().Done() // no run under way after this
		}
	})
	testsupport.Eventually(t, 20*time.Second, "3 runs", func() bool { return log.count() >= 3 })
	for _, c := range crons {
		<-c.Stop().Done()
	}
	ticks, _ := log.snapshot()
	for tick, insts := range ticks {
		assert.Len(t, insts, 1, "tick %d ran on %v", tick, insts)
	}
}

func TestCronOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var logs testsupport.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := locktest.NewOn(t, srv)
	l := scheduler.NewLocker(c, scheduler.WithLogger(logger), scheduler.WithMinHold(0))

	t.Run("a run another instance holds is skipped and logged at Debug", func(t *testing.T) {
		other := locktest.NewOn(t, srv).Mutex("gocron:cron-busy")
		hctx, err := other.TryLock(ctx, 0, 0)
		require.NoError(t, err)
		ran := false
		cron.NewChain(scheduler.CronOnce(l, "cron-busy")).Then(cron.FuncJob(func() { ran = true })).Run()
		assert.False(t, ran, "the job ran while another instance held its lock")
		assert.Contains(t, logs.String(), "level=DEBUG")
		assert.Contains(t, logs.String(), "another instance runs it")
		require.NoError(t, other.Unlock(hctx))

		cron.NewChain(scheduler.CronOnce(l, "cron-busy")).Then(cron.FuncJob(func() { ran = true })).Run()
		assert.True(t, ran, "the job runs once the lock is free")
	})

	t.Run("the job runs holding its lock, released after", func(t *testing.T) {
		m := c.Mutex("gocron:cron-held")
		cron.NewChain(scheduler.CronOnce(l, "cron-held")).Then(cron.FuncJob(func() {
			locked, err := m.IsLocked(ctx)
			assert.NoError(t, err)
			assert.True(t, locked, "the job runs without its lock")
		})).Run()
		locked, err := m.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "released after the run (no minimum hold here)")
	})

	t.Run("a panicking run releases its lock, and the panic goes on to cron.Recover", func(t *testing.T) {
		var recovered testsupport.LogBuffer
		job := cron.NewChain(cron.Recover(cron.PrintfLogger(stdLogger{&recovered})), scheduler.CronOnce(l, "cron-panic")).
			Then(cron.FuncJob(func() { panic("job failed") }))
		job.Run()
		assert.Contains(t, recovered.String(), "job failed")
		locked, err := c.Mutex("gocron:cron-panic").IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "the panic left the lock held")
	})

	t.Run("a Redis failure skips the run and logs a warning", func(t *testing.T) {
		dl := scheduler.NewLocker(locktest.NewDown(t), scheduler.WithLogger(logger))
		ran := false
		cron.NewChain(scheduler.CronOnce(dl, "cron-down")).Then(cron.FuncJob(func() { ran = true })).Run()
		assert.False(t, ran)
		assert.Contains(t, logs.String(), "level=WARN msg=\"scheduler: cron run skipped\" job=cron-down")
	})
}

// stdLogger is a printf logger over a LogBuffer, for cron.PrintfLogger.
type stdLogger struct{ w *testsupport.LogBuffer }

func (s stdLogger) Printf(format string, args ...any) { fmt.Fprintf(s.w, format, args...) }

func TestCronOnceConfigurationPanics(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	c := lockmw.New(rdb)
	defer c.Close()
	l := scheduler.NewLocker(c)
	assert.PanicsWithValue(t, `scheduler: CronOnce(nil, "report"): a Locker is required`, func() { scheduler.CronOnce(nil, "report") })
	assert.PanicsWithValue(t, `scheduler: CronOnce(l, ""): the job name must not be empty`, func() { scheduler.CronOnce(l, "") })
	assert.Panics(t, func() { scheduler.CronOnce(l, "bad\x00name") })
	assert.NotPanics(t, func() { scheduler.CronOnce(l, "report") })
}
