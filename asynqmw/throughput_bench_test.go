package asynqmw_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/benchmeter"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

// benchQueue is the queue of BenchmarkTasksPerSecond, paused while it fills.
const benchQueue = "bench"

// benchConcurrency is the asynq server's Concurrency: 64 workers, as the
// 64 goroutines of examples/bench's parallel scenario.
const benchConcurrency = 64

// BenchmarkTasksPerSecond is what the lock costs a task: tasks processed
// per second by a real asynq.Server (Concurrency 64) without asynqmw
// ("none") and with asynqmw.New's lock ("lock"), each task with a payload of
// its own, so a key (and a lock) of its own: none contended. The two take
// turns on one server, every 2 s with -benchtime 30s
// (benchmeter.TurnLength): a task that starts in a turn runs as that
// turn's variant, and a turn ends when its tasks have (see
// benchmeter.Turns, also for the metrics; ns/op is both together). The task
// does what a task that updates a record does: one Redis round trip (INCR)
// on the go-redis client the lockmw.Client uses; the asynq server has a
// client of its own; both have go-redis' default options, as a service
// builds them.
//
// Each round enqueues b.N tasks into a paused queue and starts the server
// (untimed), then times from unpausing the queue until the last task has
// returned through the middleware (its lock released). asynq dequeues one
// task per round trip, one at a time per server. p50-µs and p99-µs are the
// middleware and the task, not the wait in the queue. Sub-benchmarks: the
// ground (loopback; through a faultproxy, 500 µs each way, for asynq, the
// lock and the task alike). Run with
//
//	go test -run '^$' -bench TasksPerSecond -benchtime 30s ./asynqmw
func BenchmarkTasksPerSecond(b *testing.B) {
	srv := redistest.Start(b)
	for _, g := range benchmeter.Grounds {
		b.Run("ground="+g.Name, func(b *testing.B) {
			addr := g.Addr(b, srv)
			defaults := func(o *redis.Options) { o.Addr, o.ContextTimeoutEnabled = addr, false }
			rdb, queueRdb := srv.NewClient(defaults), srv.NewClient(defaults)
			b.Cleanup(func() { _ = rdb.Close(); _ = queueRdb.Close() })
			locks := locktest.New(b, rdb)
			task := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
				return rdb.Incr(ctx, "task:"+string(t.Payload())).Err()
			})
			benchTasks(b, srv, queueRdb, [2]asynq.Handler{task, asynqmw.New(locks)(task)})
		})
	}
}

// taskRuns numbers the tasks of every round: each one a payload of its own.
var taskRuns atomic.Int64

// benchTasks runs one round of BenchmarkTasksPerSecond: b.N tasks through
// a server on queueRdb, each handled by variants[v] for the v whose turn it
// is when the task starts.
func benchTasks(b *testing.B, srv *redistest.Server, queueRdb *redis.Client, variants [2]asynq.Handler) {
	insp := asynq.NewInspectorFromRedisClient(srv.Client()) // on a shared client: nothing to close
	if err := insp.PauseQueue(benchQueue); err != nil {
		b.Fatal(err)
	}
	enqueueTasks(b, srv.Client(), b.N)

	turns := benchmeter.NewTurns(srv, "none", "lock")
	var finished atomic.Int64
	all := make(chan struct{})
	h := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		v := turns.Begin()
		start := time.Now()
		err := variants[v].ProcessTask(ctx, t)
		turns.End(v, time.Since(start))
		if err != nil {
			b.Errorf("task %s: %v", t.Payload(), err)
		}
		if finished.Add(1) == int64(b.N) {
			close(all)
		}
		return err
	})
	s := asynq.NewServerFromRedisClient(queueRdb, asynq.Config{
		Concurrency:       benchConcurrency,
		Queues:            map[string]int{benchQueue: 1},
		TaskCheckInterval: 5 * time.Millisecond, // the first dequeue after the unpause comes soon
		ShutdownTimeout:   5 * time.Second,
		Logger:            nopLogger{},
	})
	if err := s.Start(h); err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()

	turns.Start(b)
	stop := turns.PassEvery(b, benchmeter.TurnLength())
	defer stop() // before Shutdown, after the Report below
	b.ResetTimer()
	if err := insp.UnpauseQueue(benchQueue); err != nil {
		b.Fatal(err)
	}
	timer := time.NewTimer(5 * time.Minute)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
		b.Fatalf("%d of %d tasks finished after 5 minutes", finished.Load(), b.N)
	}
	b.StopTimer()
	stop()
	turns.Report(b, "tasks")
}

// enqueueTasks puts n tasks of their own payloads into the bench queue,
// from 16 goroutines on loopback (rdb: the server's own client): set-up, so
// through no proxy.
func enqueueTasks(b *testing.B, rdb redis.UniversalClient, n int) {
	b.Helper()
	c := asynq.NewClientFromRedisClient(rdb) // on a shared client: nothing to close
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				t := asynq.NewTask("bench", []byte(strconv.FormatInt(taskRuns.Add(1), 10)))
				if _, err := c.Enqueue(t, asynq.Queue(benchQueue), asynq.MaxRetry(0)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
