package asynqmw_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// These tests run the middleware in real asynq servers, fed by an asynq
// client, on a real redis-server.

func TestServerIdenticalTasksNeverOverlap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb2 := e.srv.NewClient()
	c2 := locktest.New(t, rdb2) // the second server is another process: another owner

	const tasks = 8
	var tr testsupport.Peak
	var runs atomic.Int32
	h := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		tr.Enter()
		defer tr.Leave()
		time.Sleep(20 * time.Millisecond) // the work, during which duplicates arrive
		runs.Add(1)
		return nil
	})
	results := make(chan result, 1000)
	startServer(t, e.rdb, 3, record(results)(asynqmw.New(e.c)(h)))
	startServer(t, rdb2, 3, record(results)(asynqmw.New(c2)(h)))

	task := asynq.NewTask("report:build", []byte(`{"day":"2024-05-01"}`))
	for range tasks {
		// MaxRetry(1): a busy attempt that used up a retry would soon archive
		// the task, and it would never run.
		enqueue(t, e.rdb, task, asynq.MaxRetry(1))
	}
	succeeded, busy := 0, 0
	for succeeded < tasks {
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		switch {
		case r.err == nil:
			succeeded++
		case asynqmw.IsBusy(r.err):
			busy++
		default:
			t.Fatalf("task %s failed: %v", r.id, r.err)
		}
	}
	require.EqualValues(t, tasks, runs.Load())
	require.Equal(t, 1, tr.Max(), "identical tasks overlapped")
	require.Positive(t, busy, "no task ever found the key busy: the test proved nothing")
	t.Logf("%d busy attempts", busy)
}

func TestServerBusyRetriesDoNotUseUpRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("waits its turn"))
	name := lockName(task.Type(), task.Payload())
	other := e.other(t)
	hctx, err := other.Mutex(name).Lock(t.Context())
	require.NoError(t, err)

	retried := make(chan int, 1)
	results := make(chan result, 1000)
	startServer(t, e.rdb, 2, record(results)(asynqmw.New(e.c)(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		n, _ := asynq.GetRetryCount(ctx)
		retried <- n
		return nil
	}))))
	id := enqueue(t, e.rdb, task, asynq.MaxRetry(1))

	for range 3 { // more busy attempts than MaxRetry allows failures
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		require.Equal(t, id, r.id)
		require.True(t, asynqmw.IsBusy(r.err), "%v", r.err)
	}
	require.NoError(t, other.Mutex(name).Unlock(hctx))
	for {
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		if r.err == nil {
			break
		}
		require.True(t, asynqmw.IsBusy(r.err), "%v", r.err)
	}
	require.Equal(t, 0, testsupport.Recv(t, retried, waitLimit, "the handler's retry count"), "busy attempts counted as retries")
}

func TestServerSkipDropsDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var runs atomic.Int32
	started, release := make(chan struct{}, 10), make(chan struct{})
	results := make(chan result, 100)
	startServer(t, e.rdb, 4, record(results)(asynqmw.New(e.c, asynqmw.WithOnBusy(asynqmw.Skip))(asynq.HandlerFunc(
		func(ctx context.Context, _ *asynq.Task) error {
			runs.Add(1)
			started <- struct{}{}
			return awaitRelease(ctx, release)
		}))))

	task := asynq.NewTask("t", []byte("skip"))
	ids := map[string]bool{}
	for range 4 {
		ids[enqueue(t, e.rdb, task)] = true
	}
	testsupport.Recv(t, started, waitLimit, "the handler's start")
	for range 3 { // dropped while the first one runs
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		require.NoError(t, r.err)
		require.True(t, ids[r.id])
		delete(ids, r.id)
	}
	require.EqualValues(t, 1, runs.Load())
	close(release)
	r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
	require.NoError(t, r.err)
	require.True(t, ids[r.id], "a task finished twice")
	require.EqualValues(t, 1, runs.Load())
}

func TestServerDedupWindowSkipsRerun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var runs atomic.Int32
	results := make(chan result, 100)
	startServer(t, e.rdb, 2, record(results)(asynqmw.New(e.c, asynqmw.WithDedupWindow(time.Minute))(asynq.HandlerFunc(
		func(context.Context, *asynq.Task) error { runs.Add(1); return nil }))))

	task := asynq.NewTask("t", []byte("once"))
	for i := range 3 {
		enqueue(t, e.rdb, task)
		require.NoError(t, testsupport.Recv(t, results, waitLimit, "an attempt's result").err, "run %d", i)
		require.EqualValues(t, 1, runs.Load(), "run %d", i)
	}
	ttl := e.rdb.PTTL(t.Context(), doneKey(task.Type(), task.Payload())).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "mark TTL %v", ttl)

	enqueue(t, e.rdb, asynq.NewTask("t", []byte("another")))
	require.NoError(t, testsupport.Recv(t, results, waitLimit, "an attempt's result").err)
	require.EqualValues(t, 2, runs.Load())
}

func TestServerLockLostRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lockmw.WithWatchdogTimeout(300*time.Millisecond))
	task := asynq.NewTask("t", []byte("lost"))
	other := e.other(t)

	var attempts atomic.Int32
	started := make(chan struct{}, 1)
	results := make(chan result, 100)
	startServer(t, e.rdb, 1, record(results)(asynqmw.New(e.c)(asynq.HandlerFunc(
		func(ctx context.Context, _ *asynq.Task) error {
			if attempts.Add(1) > 1 {
				return nil
			}
			started <- struct{}{}
			return testsupport.WaitDone(ctx, waitLimit)
		}))))

	id := enqueue(t, e.rdb, task, asynq.MaxRetry(3))
	testsupport.Recv(t, started, waitLimit, "the handler's start")
	ok, err := other.Mutex(lockName(task.Type(), task.Payload())).ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, ok)

	r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
	require.Equal(t, id, r.id)
	require.ErrorIs(t, r.err, lockmw.ErrLockLost)
	require.ErrorIs(t, r.err, context.Canceled)
	require.False(t, asynqmw.IsBusy(r.err))

	r = testsupport.Recv(t, results, waitLimit, "an attempt's result")
	require.Equal(t, id, r.id)
	require.NoError(t, r.err)
	require.EqualValues(t, 2, attempts.Load())
}

func TestServerDifferentKeysOverlap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in, both := make(chan struct{}, 2), make(chan struct{})
	results := make(chan result, 100)
	startServer(t, e.rdb, 2, record(results)(asynqmw.New(e.c)(asynq.HandlerFunc(
		func(ctx context.Context, _ *asynq.Task) error {
			in <- struct{}{}
			select {
			case <-both:
				return nil
			case <-time.After(waitLimit):
				return errors.New("the other task never started")
			}
		}))))

	enqueue(t, e.rdb, asynq.NewTask("t", []byte("a")))
	enqueue(t, e.rdb, asynq.NewTask("t", []byte("b")))
	testsupport.Recv(t, in, waitLimit, "a handler's start")
	testsupport.Recv(t, in, waitLimit, "a handler's start") // both handlers run at once
	close(both)
	require.NoError(t, testsupport.Recv(t, results, waitLimit, "an attempt's result").err)
	require.NoError(t, testsupport.Recv(t, results, waitLimit, "an attempt's result").err)
}
