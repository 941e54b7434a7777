package rivermw_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/rivermw"
)

// blocker is a worker that reports each job it starts and runs until
// release is closed, counting how many run at once.
type blocker struct {
	started chan int64
	release chan struct{}
	running testsupport.Peak
}

func newBlocker() *blocker {
	return &blocker{started: make(chan int64, 100), release: make(chan struct{})}
}

func (b *blocker) work(ctx context.Context, job *river.Job[jobArgs]) error {
	b.running.Enter()
	defer b.running.Leave()
	b.started <- job.ID
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// twoClients starts a blocker's River clients on e, working the queues "a"
// and "b", as two processes of one deployment.
func (e *env) twoClients(t *testing.T, opts ...rivermw.Option) (b *blocker, a, bc *river.Client[pgx.Tx]) {
	t.Helper()
	b = newBlocker()
	a = e.start(t, node{queue: "a", opts: opts, work: b.work})
	bc = e.start(t, node{queue: "b", opts: opts, work: b.work})
	return b, a, bc
}

func TestSameKeyJobsNeverOverlapAcrossClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, a, bc := e.twoClients(t)

	first := insert(t, a, jobArgs{Key: "k"}, "a")
	require.Equal(t, first.ID, testsupport.Recv(t, b.started, waitLimit, "the first job starts"))
	// The same args on the other client's queue: the same key.
	second := insert(t, bc, jobArgs{Key: "k"}, "b")
	e.next(t, "the second job is snoozed while the first runs", snoozed(second.ID))
	ids := []int64{first.ID, second.ID}
	for i := range 6 {
		c, q := a, "a"
		if i%2 == 1 {
			c, q = bc, "b"
		}
		ids = append(ids, insert(t, c, jobArgs{Key: "k"}, q).ID)
	}
	close(b.release)
	for _, id := range ids {
		job := finished(t, a, id, rivertype.JobStateCompleted)
		require.Empty(t, job.Errors, "a snooze records no error")
	}
	require.Equal(t, 1, b.running.Max(), "jobs of one key ran at once")
}

func TestOtherKeysRunSideBySide(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, a, bc := e.twoClients(t)

	x := insert(t, a, jobArgs{Key: "x"}, "a")
	y := insert(t, bc, jobArgs{Key: "y"}, "b")
	got := map[int64]bool{}
	for range 2 {
		got[testsupport.Recv(t, b.started, waitLimit, "both keys' jobs start before either ends")] = true
	}
	require.Equal(t, map[int64]bool{x.ID: true, y.ID: true}, got)
	close(b.release)
	finished(t, a, x.ID, rivertype.JobStateCompleted)
	finished(t, a, y.ID, rivertype.JobStateCompleted)
	require.Equal(t, 2, b.running.Max())
}

func TestPermitsLetNJobsOfAKeyRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, a, bc := e.twoClients(t, rivermw.WithPermits(2))

	ids := []int64{insert(t, a, jobArgs{Key: "k"}, "a").ID, insert(t, bc, jobArgs{Key: "k"}, "b").ID}
	for range 2 {
		testsupport.Recv(t, b.started, waitLimit, "two jobs of the key start")
	}
	ids = append(ids, insert(t, a, jobArgs{Key: "k"}, "a").ID)
	e.next(t, "the third job is snoozed while two run", snoozed(ids[2]))
	close(b.release)
	for _, id := range ids {
		finished(t, a, id, rivertype.JobStateCompleted)
	}
	require.Equal(t, 2, b.running.Max())
}

// snoozes is River's snooze count in a job's metadata.
func snoozes(t *testing.T, job *rivertype.JobRow) int {
	t.Helper()
	var md struct {
		Snoozes *int `json:"snoozes"`
	}
	require.NoError(t, json.Unmarshal(job.Metadata, &md))
	if md.Snoozes == nil {
		return 0
	}
	return *md.Snoozes
}

func TestRiverRecordsTheSnooze(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ran := make(chan int64, 10)
	c := e.start(t, node{opts: byArgsKey(), work: func(_ context.Context, job *river.Job[jobArgs]) error {
		ran <- job.ID
		return nil
	}})
	m := locktest.NewOn(t, e.redis).Mutex(heldLock)
	hold := locktest.MustLock(t, m, t.Context())
	job := insert(t, c, jobArgs{Key: "held"}, "")

	e.next(t, "a first snooze", snoozed(job.ID))
	e.next(t, "a second snooze", snoozed(job.ID))
	testsupport.Eventually(t, waitLimit, "River counts two snoozes", func() bool {
		row, err := c.JobGet(t.Context(), job.ID)
		require.NoError(t, err)
		return snoozes(t, row) >= 2
	})
	row, err := c.JobGet(t.Context(), job.ID)
	require.NoError(t, err)
	require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRunning}, row.State)
	require.Empty(t, row.Errors, "a snooze is no failure")
	require.Empty(t, ran, "the worker never ran while the key was held")

	require.NoError(t, m.Unlock(hold))
	require.Equal(t, job.ID, testsupport.Recv(t, ran, waitLimit, "the job runs once the key is free"))
	done := finished(t, c, job.ID, rivertype.JobStateCompleted)
	require.Equal(t, 1, done.Attempt, "snoozes used no attempt")
	require.Empty(t, done.Errors)
	require.GreaterOrEqual(t, snoozes(t, done), 2)
}

func TestSnoozeCapFailsTheJob(t *testing.T) {
	t.Parallel()
	for _, max := range []int{0, 2} {
		t.Run(map[int]string{0: "no snooze at all", 2: "after two snoozes"}[max], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := e.start(t, node{opts: byArgsKey(rivermw.WithMaxSnoozes(max)), work: func(context.Context, *river.Job[jobArgs]) error {
				t.Error("the worker ran while its key was held")
				return nil
			}})
			locktest.MustLock(t, locktest.NewOn(t, e.redis).Mutex(heldLock), t.Context())
			job := insert(t, c, jobArgs{Key: "held"}, "", func(o *river.InsertOpts) { o.MaxAttempts = 1 })

			for range max {
				e.next(t, "a snooze under the cap", snoozed(job.ID))
			}
			failed := e.next(t, "the busy attempt past the cap", func(a attempt) bool { return a.id == job.ID })
			require.ErrorIs(t, failed.err, lockmw.ErrNotAcquired)
			require.ErrorIs(t, failed.err, rivermw.ErrBusy)
			be, ok := errors.AsType[*lockmw.BusyError](failed.err)
			require.True(t, ok, "a BusyError says who held the key: %v", failed.err)
			require.Equal(t, heldLock, be.Name)

			row := finished(t, c, job.ID, rivertype.JobStateDiscarded)
			require.Equal(t, max, snoozes(t, row))
			require.Len(t, row.Errors, 1)
			require.Contains(t, row.Errors[0].Error, "key busy")
		})
	}
}

func TestWaitTakesTheKeyWhenItIsFreed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	waiting := make(chan string, 10)
	locks := locktest.NewOn(t, e.redis, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, ev lockmw.AcquireStartEvent) context.Context {
			waiting <- ev.Name
			return ctx
		},
	}))
	c := e.start(t, node{locks: locks, opts: byArgsKey(rivermw.WithWait(waitLimit)), work: func(context.Context, *river.Job[jobArgs]) error { return nil }})
	m := locktest.NewOn(t, e.redis).Mutex(heldLock)
	hold := locktest.MustLock(t, m, t.Context())
	job := insert(t, c, jobArgs{Key: "held"}, "")
	require.Equal(t, heldLock, testsupport.Recv(t, waiting, waitLimit, "the job starts waiting"))
	require.NoError(t, m.Unlock(hold))
	done := finished(t, c, job.ID, rivertype.JobStateCompleted)
	require.Zero(t, snoozes(t, done), "a job that waited was never snoozed")
	require.Equal(t, 1, done.Attempt)
}

func TestWaitEndsInASnooze(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t, node{opts: byArgsKey(rivermw.WithWait(testSnooze)), work: func(context.Context, *river.Job[jobArgs]) error { return nil }})
	m := locktest.NewOn(t, e.redis).Mutex(heldLock)
	hold := locktest.MustLock(t, m, t.Context())
	job := insert(t, c, jobArgs{Key: "held"}, "")
	e.next(t, "the job snoozed after its wait", snoozed(job.ID))
	require.NoError(t, m.Unlock(hold))
	finished(t, c, job.ID, rivertype.JobStateCompleted)
}

func TestLockLossCancelsTheJobAndRiverRetriesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	causes := make(chan error, 10)
	started := make(chan struct{}, 10)
	locks := locktest.NewOn(t, e.redis, lockmw.WithWatchdogTimeout(1500*time.Millisecond))
	c := e.start(t, node{locks: locks, work: func(ctx context.Context, job *river.Job[jobArgs]) error {
		if job.Attempt > 1 {
			return nil
		}
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil // the loss fails the attempt even so
	}})
	job := insert(t, c, jobArgs{Key: "lost"}, "")
	testsupport.Recv(t, started, waitLimit, "the first attempt starts")
	forced, err := locktest.NewOn(t, e.redis).Mutex(lockName(job)).ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced)

	require.ErrorIs(t, testsupport.Recv(t, causes, waitLimit, "the job's context ends"), lockmw.ErrLockLost)
	lost := e.next(t, "the first attempt's result", func(a attempt) bool { return a.id == job.ID })
	require.ErrorIs(t, lost.err, lockmw.ErrLockLost)

	done := finished(t, c, job.ID, rivertype.JobStateCompleted)
	require.Equal(t, 2, done.Attempt, "River retried the job")
	require.Len(t, done.Errors, 1)
	require.Contains(t, done.Errors[0].Error, lockmw.ErrLockLost.Error())
}

func TestInvalidKeyCancelsTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t, node{
		opts: []rivermw.Option{rivermw.WithKey(func(context.Context, *rivertype.JobRow) string { return "bad\x00key" })},
		work: func(context.Context, *river.Job[jobArgs]) error {
			t.Error("the worker ran with an invalid key")
			return nil
		},
	})
	job := insert(t, c, jobArgs{Key: "x"}, "")
	a := e.next(t, "the attempt", func(a attempt) bool { return a.id == job.ID })
	require.ErrorIs(t, a.err, lockmw.ErrInvalidName)
	require.ErrorIs(t, a.err, &rivertype.JobCancelError{})
	finished(t, c, job.ID, rivertype.JobStateCancelled)
}

func TestEmptyKeyRunsUnlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t, node{
		opts: []rivermw.Option{rivermw.WithKey(func(context.Context, *rivertype.JobRow) string { return "" })},
		work: func(context.Context, *river.Job[jobArgs]) error { return nil },
	})
	job := insert(t, c, jobArgs{Key: "x"}, "")
	finished(t, c, job.ID, rivertype.JobStateCompleted)
	keys, err := e.redis.Client().Keys(t.Context(), rivermw.DefaultKeyPrefix+"*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "no lock was taken")
}

// logRecords is a slog.Handler that hands every record to a channel.
type logRecords chan slog.Record

func (logRecords) Enabled(context.Context, slog.Level) bool        { return true }
func (h logRecords) Handle(_ context.Context, r slog.Record) error { h <- r; return nil }
func (h logRecords) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h logRecords) WithGroup(string) slog.Handler                 { return h }

func TestFailedReleaseAfterSuccessCompletesTheJobAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	logs := make(logRecords, 10)
	c := e.start(t, node{
		locks: locktest.NewOn(t, e.redis, lockmw.WithReleaseTimeout(time.Second)),
		opts:  []rivermw.Option{rivermw.WithLogger(slog.New(logs))},
		work: func(context.Context, *river.Job[jobArgs]) error {
			return e.redis.Stop() // the release that follows fails
		},
	})
	job := insert(t, c, jobArgs{Key: "x"}, "")
	a := e.next(t, "the attempt", func(a attempt) bool { return a.id == job.ID })
	require.NoError(t, a.err, "the job is not retried for the middleware's bookkeeping")
	r := testsupport.Recv(t, logs, waitLimit, "the failed release is logged")
	require.Equal(t, slog.LevelWarn, r.Level)
	require.Contains(t, r.Message, "releasing its lock failed")
	done := finished(t, c, job.ID, rivertype.JobStateCompleted)
	require.Equal(t, 1, done.Attempt)
}

func TestStopAndCancelEndsAWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	waiting := make(chan string, 10)
	locks := locktest.NewOn(t, e.redis, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, ev lockmw.AcquireStartEvent) context.Context {
			waiting <- ev.Name
			return ctx
		},
	}))
	c := e.start(t, node{locks: locks, opts: byArgsKey(rivermw.WithWait(time.Hour)), work: func(context.Context, *river.Job[jobArgs]) error {
		t.Error("the worker ran while its key was held")
		return nil
	}})
	locktest.MustLock(t, locktest.NewOn(t, e.redis).Mutex(heldLock), t.Context())
	job := insert(t, c, jobArgs{Key: "held"}, "")
	require.Equal(t, heldLock, testsupport.Recv(t, waiting, waitLimit, "the job starts waiting"))

	require.NoError(t, c.StopAndCancel(testsupport.CtxFor(t, waitLimit)))
	a := e.next(t, "the attempt", func(a attempt) bool { return a.id == job.ID })
	require.ErrorIs(t, a.err, context.Canceled)
	row := finished(t, c, job.ID, rivertype.JobStateAvailable) // back in its queue
	require.Zero(t, row.Attempt, "the interrupted wait used no attempt")
	require.Empty(t, row.Errors)
}
