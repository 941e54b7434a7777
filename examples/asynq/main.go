// Command asynq shows asynqmw de-duplicating a burst of identical asynq
// tasks: two workers, standing for two instances of a service, share a queue
// into which 10 tasks are enqueued at once, 5 copies each of two reports.
// Each report is built once (200ms of work). The copies that arrive while it
// is being built wait up to 100ms for its key; those still finding it busy are
// retried (without counting as failures); all of them then find its dedup
// mark and are skipped. The two reports, having different keys, are built at
// the same time. Run it with
//
//	go run ./examples/asynq
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis), on which both asynq's and
// rlock's Lua scripts run; set REDIS_ADDR=host:port to use a real server. It
// runs for about a second (busy retries are due on asynq's whole-second clock)
// and exits 0; it exits 1 if a report was built more than once.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/lockmw"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "asynq:", err)
		os.Exit(1)
	}
}

// stats counts what happened to the tasks' attempts.
type stats struct {
	runs, skipped, busy atomic.Int32
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()

	var st stats
	start := time.Now()
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf("%6.3fs  "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}

	for _, worker := range []string{"worker-1", "worker-2"} {
		stop, err := startWorker(rdb, worker, &st, say)
		if err != nil {
			return err
		}
		defer stop()
	}

	say("enqueueing 10 tasks: 5 x report 2024-05-01, 5 x report 2024-05-02")
	client := asynq.NewClientFromRedisClient(rdb)
	for i := range 10 {
		day := []string{"2024-05-01", "2024-05-02"}[i%2]
		if _, err := client.EnqueueContext(ctx, asynq.NewTask("report:build", []byte(day))); err != nil {
			return err
		}
	}

	inspector := asynq.NewInspectorFromRedisClient(rdb)
	for {
		q, err := inspector.GetQueueInfo("default")
		if err != nil {
			return err
		}
		if q.Size == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tasks still queued: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	say("queue empty: %d runs, %d duplicates skipped, %d busy attempts retried", st.runs.Load(), st.skipped.Load(), st.busy.Load())
	if st.runs.Load() != 2 {
		return fmt.Errorf("expected 2 runs, got %d", st.runs.Load())
	}
	return nil
}

// startWorker starts an asynq server with its own lockmw.Client, as one
// instance of the service would.
func startWorker(rdb redis.UniversalClient, name string, st *stats, say func(string, ...any)) (stop func(), err error) {
	locks := lockmw.New(rdb)

	mux := asynq.NewServeMux()
	// Outside asynqmw: tell busy attempts and skipped duplicates apart.
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			before := st.runs.Load()
			err := next.ProcessTask(ctx, t)
			switch {
			case asynqmw.IsBusy(err):
				st.busy.Add(1)
			case err == nil && st.runs.Load() == before:
				st.skipped.Add(1)
				say("%s: report %s already built: skipped", name, t.Payload())
			}
			return err
		})
	})
	mux.Use(asynqmw.New(locks, asynqmw.WithDedupWindow(time.Minute), asynqmw.WithWait(100*time.Millisecond)))
	mux.HandleFunc("report:build", func(ctx context.Context, t *asynq.Task) error {
		st.runs.Add(1)
		say("%s: building report %s", name, t.Payload())
		select {
		case <-time.After(200 * time.Millisecond): // the work
		case <-ctx.Done(): // shut down, or the lock was lost
			return ctx.Err()
		}
		say("%s: report %s built", name, t.Payload())
		return nil
	})

	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 4,
		// A busy task goes back to the queue without using up its retries,
		// and is retried soon.
		IsFailure:      func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc: asynqmw.RetryDelay(time.Second, nil),
		// Poll often, for a quick example.
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		ShutdownTimeout:          2 * time.Second,
		LogLevel:                 asynq.ErrorLevel,
	})
	if err := srv.Start(mux); err != nil {
		_ = locks.Close()
		return nil, err
	}
	return func() {
		srv.Shutdown()
		_ = locks.Close()
	}, nil
}
