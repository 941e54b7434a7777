package asynqmw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// A burst of identical tasks: one runs, the others find the key busy, are
// retried without counting as failures, and then find the dedup mark.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a throwaway redis-server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	locks := lockmw.New(rdb)
	defer locks.Close()

	var runs atomic.Int32
	mux := asynq.NewServeMux()
	mux.Use(asynqmw.New(locks, asynqmw.WithDedupWindow(time.Minute)))
	mux.HandleFunc("report:build", func(ctx context.Context, t *asynq.Task) error {
		runs.Add(1)
		time.Sleep(50 * time.Millisecond) // the work
		return nil
	})

	server := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 4,
		// A busy task is retried soon, without using up its retries.
		IsFailure:      func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc: asynqmw.RetryDelay(100*time.Millisecond, nil),
		// Poll often, for a quick example.
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	})
	if err := server.Start(mux); err != nil {
		fmt.Println(err)
		return
	}
	defer server.Shutdown()

	client := asynq.NewClientFromRedisClient(rdb)
	for range 5 {
		if _, err := client.Enqueue(asynq.NewTask("report:build", []byte(`{"day":"2024-05-01"}`))); err != nil {
			fmt.Println(err)
			return
		}
	}

	// Wait until the queue is empty: every task has been handled.
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if q, err := inspector.GetQueueInfo("default"); err == nil && q.Size == 0 {
			break
		}
	}
	fmt.Println("tasks enqueued: 5, handler runs:", runs.Load())
	// Output: tasks enqueued: 5, handler runs: 1
}

// Tasks of one customer run one at a time, whatever their type and payload;
// tasks without a customer run without a lock. A busy task waits up to a
// second for its turn before going back to the queue.
func ExampleWithKey() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	byCustomer := func(_ context.Context, t *asynq.Task) string {
		var p struct {
			Customer string `json:"customer"`
		}
		if json.Unmarshal(t.Payload(), &p) != nil || p.Customer == "" {
			return "" // no lock
		}
		return "customer:" + p.Customer
	}
	mux := asynq.NewServeMux()
	mux.Use(asynqmw.New(locks, asynqmw.WithKey(byCustomer), asynqmw.WithWait(time.Second)))
	_ = mux
}

// With Skip, a task whose key is busy is dropped: useful for "refresh" tasks
// where one run in progress is as good as another.
func ExampleWithOnBusy() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	mux := asynq.NewServeMux()
	mux.Use(asynqmw.New(locks, asynqmw.WithOnBusy(asynqmw.Skip)))
	_ = mux
}

// At most two exports of one tenant run at once, on every server: a third
// waits up to a minute for a permit, in rlock's fair queue, then goes back to
// the queue as a busy task. Exports of other tenants are not held up.
func ExampleWithPermits() {
	srv, err := redistest.Launch(redistest.Config{}) // a throwaway redis-server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	locks := lockmw.New(rdb)
	defer locks.Close()

	byTenant := func(_ context.Context, t *asynq.Task) string { return "export:" + string(t.Payload()) }
	var running atomic.Int32
	var overLimit atomic.Bool
	done := make(chan struct{}, 6)
	mux := asynq.NewServeMux()
	mux.Use(asynqmw.New(locks, asynqmw.WithKey(byTenant), asynqmw.WithPermits(2), asynqmw.WithWait(time.Minute)))
	mux.HandleFunc("export", func(ctx context.Context, t *asynq.Task) error {
		if running.Add(1) > 2 {
			overLimit.Store(true)
		}
		time.Sleep(20 * time.Millisecond) // the work
		running.Add(-1)
		done <- struct{}{}
		return nil
	})

	server := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:       6,
		IsFailure:         func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc:    asynqmw.RetryDelay(time.Second, nil),
		TaskCheckInterval: 50 * time.Millisecond,
		LogLevel:          asynq.ErrorLevel,
	})
	if err := server.Start(mux); err != nil {
		fmt.Println(err)
		return
	}
	defer server.Shutdown()

	client := asynq.NewClientFromRedisClient(rdb)
	for range 6 {
		if _, err := client.Enqueue(asynq.NewTask("export", []byte("acme"))); err != nil {
			fmt.Println(err)
			return
		}
	}
	for range 6 {
		select {
		case <-done:
		case <-time.After(time.Minute):
			fmt.Println("timed out")
			return
		}
	}
	fmt.Println("exports: 6, more than 2 at once:", overLimit.Load())
	// Output: exports: 6, more than 2 at once: false
}

// WithOnSkip is told of each task the middleware did not run, with a
// reason that says why: here a duplicate, then a task whose key another
// worker holds. The middleware is called directly, as asynq's worker would.
func ExampleWithOnSkip() {
	srv, err := redistest.Launch(redistest.Config{}) // a throwaway redis-server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	onSkip := asynqmw.WithOnSkip(func(_ context.Context, t *asynq.Task, reason error) {
		fmt.Printf("skipped %s: duplicate %t, busy %t\n", t.Type(), errors.Is(reason, asynqmw.ErrDuplicate), errors.Is(reason, asynqmw.ErrBusy))
	})
	mw := asynqmw.New(locks, asynqmw.WithDedupWindow(time.Minute), asynqmw.WithOnBusy(asynqmw.Skip), onSkip)
	h := mw(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		fmt.Println("ran")
		return nil
	}))
	ctx := context.Background()
	email := asynq.NewTask("email:send", []byte(`{"to":"a@example.com"}`))
	_ = h.ProcessTask(ctx, email)
	_ = h.ProcessTask(ctx, email) // its dedup mark is there

	report := asynq.NewTask("report:build", nil)
	other := lockmw.New(rdb) // another worker, holding the report's key
	defer other.Close()
	m := other.Mutex("asynq:lock:" + asynqmw.DefaultKey(ctx, report))
	hold, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = h.ProcessTask(ctx, report)
	_ = m.Unlock(hold)
	// Output:
	// ran
	// skipped email:send: duplicate true, busy false
	// skipped report:build: duplicate false, busy true
}

// The settings that settle a burst of duplicates quickly: a duplicate waits
// up to 2s for the holder in rlock's queue instead of going to asynq's retry
// set (with WithWait(0), the default, it comes back only when asynq's
// forwarder next runs: every DelayedTaskCheckInterval, 5s by default,
// whatever RetryDelayFunc says), then finds the dedup mark and is skipped.
// The retries that remain come back within a second.
func ExampleWithWait_burst() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	mux := asynq.NewServeMux()
	mux.Use(asynqmw.New(locks, asynqmw.WithWait(2*time.Second), asynqmw.WithDedupWindow(time.Minute)))
	server := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		DelayedTaskCheckInterval: time.Second, // busy retries back within a second, not 5s
		IsFailure:                func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc:           asynqmw.RetryDelay(time.Second, nil),
	})
	_ = server // server.Run(mux)
}
