package asynqmw_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// These tests cover WithPermits: at most n tasks with one key at once, on a
// semaphore named prefix + "limit:" + key.

// limitName is the semaphore the middleware takes a permit of for a task by
// default, with a limit above 1.
func limitName(task *asynq.Task) string {
	return "asynq:limit:" + asynqmw.DefaultKey(context.Background(), task)
}

// Six tasks with one key, on two servers of three workers each: all six are
// taken by a worker at once, two run and four wait in the semaphore's queue;
// each task released lets exactly one waiter in.
func TestServerLimitRunsTwoAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb2 := e.srv.NewClient()
	c2 := locktest.New(t, rdb2) // the second server is another process

	const tasks, limit = 6, 2
	var tr testsupport.Peak
	in := make(chan struct{}, tasks)
	release := make(chan struct{})
	var onServer [2]atomic.Int32
	handler := func(server int) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			tr.Enter()
			defer tr.Leave()
			onServer[server].Add(1)
			in <- struct{}{}
			return awaitRelease(ctx, release)
		})
	}
	opts := []asynqmw.Option{asynqmw.WithPermits(limit), asynqmw.WithWait(waitLimit)}
	results := make(chan result, 100)
	startServer(t, e.rdb, 3, record(results)(asynqmw.New(e.c, opts...)(handler(0))))
	startServer(t, rdb2, 3, record(results)(asynqmw.New(c2, opts...)(handler(1))))

	task := asynq.NewTask("export:run", []byte(`{"tenant":"acme"}`))
	for range tasks {
		enqueue(t, e.rdb, task)
	}
	testsupport.Recv(t, in, waitLimit, "a handler's start")
	testsupport.Recv(t, in, waitLimit, "a handler's start")
	queue := layout.Semaphore(limitName(task)).Queue
	var waiting int64
	testsupport.Eventually(t, waitLimit, "every task running or waiting for a permit", func() bool {
		waiting = e.rdb.ZCard(t.Context(), queue).Val()
		return int(waiting)+tr.Now() == tasks
	})
	require.Equal(t, limit, tr.Now(), "tasks running at once")
	require.EqualValues(t, tasks-limit, waiting, "tasks waiting for a permit")

	for i := range tasks { // one at a time: each end lets one waiter in, to run beside the other
		release <- struct{}{}
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		require.NoError(t, r.err, "task %d", i)
		if i < tasks-limit {
			testsupport.Recv(t, in, waitLimit, "a waiter's start")
		}
	}
	require.Equal(t, limit, tr.Max(), "more than two tasks with one key ran at once")
	// Six workers took the six tasks at once, so each server ran three.
	require.EqualValues(t, 3, onServer[0].Load())
	require.EqualValues(t, 3, onServer[1].Load())
	n, err := e.c.Semaphore(limitName(task), limit).Available(t.Context())
	require.NoError(t, err)
	require.Equal(t, limit, n, "permits not given back")
	require.Zero(t, e.rdb.Exists(t.Context(), lockName(task.Type(), task.Payload())).Val(), "the key's lock was taken")
}

// Two tasks of one key hold both its permits while a task of another key
// runs beside them.
func TestServerLimitDifferentKeysOverlap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in, all := make(chan struct{}, 3), make(chan struct{})
	results := make(chan result, 100)
	startServer(t, e.rdb, 3, record(results)(asynqmw.New(e.c, asynqmw.WithPermits(2))(asynq.HandlerFunc(
		func(ctx context.Context, _ *asynq.Task) error {
			in <- struct{}{}
			select {
			case <-all:
				return nil
			case <-time.After(waitLimit):
				return errors.New("the other tasks never started")
			}
		}))))

	enqueue(t, e.rdb, asynq.NewTask("t", []byte("a")))
	enqueue(t, e.rdb, asynq.NewTask("t", []byte("a")))
	enqueue(t, e.rdb, asynq.NewTask("t", []byte("b")))
	for range 3 { // all three run at once
		testsupport.Recv(t, in, waitLimit, "a handler's start")
	}
	close(all)
	for range 3 {
		require.NoError(t, testsupport.Recv(t, results, waitLimit, "an attempt's result").err)
	}
}

// A task whose key has no free permit is busy, as one whose lock is held.
func TestLimitBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("limit busy"))
	name := limitName(task)
	other := e.other(t)
	// fill takes both permits as another process would, until the end of
	// the subtest; it returns one of them.
	fill := func(t *testing.T) context.Context {
		var permit context.Context
		for range 2 {
			p, err := other.Semaphore(name, 2).TryLock(t.Context(), 0, 0)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Semaphore(name, 2).Unlock(p) })
			permit = p
		}
		return permit
	}
	neverRun := func(context.Context, *asynq.Task) error { return errors.New("ran over the limit") }

	t.Run("Retry returns a busy error naming the semaphore", func(t *testing.T) {
		fill(t)
		err := run(t.Context(), asynqmw.New(e.c, asynqmw.WithPermits(2)), task, neverRun)
		require.True(t, asynqmw.IsBusy(err), "%v", err)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		var be *lockmw.BusyError
		require.ErrorAs(t, err, &be)
		require.Equal(t, name, be.Name)
		require.Positive(t, be.TTL, "the earliest permit's remaining time")
	})
	t.Run("Skip returns nil without running the handler", func(t *testing.T) {
		fill(t)
		require.NoError(t, run(t.Context(), asynqmw.New(e.c, asynqmw.WithPermits(2), asynqmw.WithOnBusy(asynqmw.Skip)), task, neverRun))
	})
	t.Run("WithWait waits for a permit", func(t *testing.T) {
		permit := fill(t)
		started := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			errc <- run(t.Context(), asynqmw.New(e.c, asynqmw.WithPermits(2), asynqmw.WithWait(waitLimit)), task,
				func(context.Context, *asynq.Task) error { close(started); return nil })
		}()
		queue := layout.Semaphore(name).Queue
		testsupport.Eventually(t, waitLimit, "the task waiting for a permit", func() bool {
			return e.rdb.ZCard(t.Context(), queue).Val() == 1
		})
		select {
		case <-started:
			t.Fatal("the task ran over the limit")
		default:
		}
		require.NoError(t, other.Semaphore(name, 2).Unlock(permit))
		require.NoError(t, testsupport.Recv(t, errc, waitLimit, "run's error"))
		testsupport.Recv(t, started, waitLimit, "the handler's start")
	})
	t.Run("Skip does not drop a task whose context ended while waiting", func(t *testing.T) {
		fill(t)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			errc <- run(ctx, asynqmw.New(e.c, asynqmw.WithPermits(2), asynqmw.WithWait(waitLimit), asynqmw.WithOnBusy(asynqmw.Skip)), task, neverRun)
		}()
		testsupport.Eventually(t, waitLimit, "the task waiting for a permit", func() bool {
			return e.rdb.ZCard(t.Context(), layout.Semaphore(name).Queue).Val() == 1
		})
		cancel()
		err := testsupport.Recv(t, errc, waitLimit, "run's error")
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	})
}

// Busy attempts over the limit go back to the retry queue without using up
// the task's retries, under the documented IsFailure.
func TestServerLimitBusyRetriesDoNotUseUpRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("waits for a permit"))
	name := limitName(task)
	other := e.other(t)
	var permits []context.Context
	for range 2 {
		p, err := other.Semaphore(name, 2).Lock(t.Context())
		require.NoError(t, err)
		permits = append(permits, p)
	}

	retried := make(chan int, 1)
	results := make(chan result, 1000)
	startServer(t, e.rdb, 2, record(results)(asynqmw.New(e.c, asynqmw.WithPermits(2))(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
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
	require.NoError(t, other.Semaphore(name, 2).Unlock(permits[0])) // one permit free: the task runs beside the other
	for {
		r := testsupport.Recv(t, results, waitLimit, "an attempt's result")
		if r.err == nil {
			break
		}
		require.True(t, asynqmw.IsBusy(r.err), "%v", r.err)
	}
	require.Equal(t, 0, testsupport.Recv(t, retried, waitLimit, "the handler's retry count"), "busy attempts counted as retries")
	require.NoError(t, other.Semaphore(name, 2).Unlock(permits[1]))
}

func TestLimitNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("names"))
	key := asynqmw.DefaultKey(t.Context(), task)

	t.Run("a limit of 1 takes the key's lock, as without the option", func(t *testing.T) {
		require.NoError(t, run(t.Context(), asynqmw.New(e.c, asynqmw.WithPermits(1), asynqmw.WithDedupWindow(time.Minute)), task,
			func(ctx context.Context, _ *asynq.Task) error {
				held, err := e.c.Mutex(lockName(task.Type(), task.Payload())).IsHeld(ctx)
				require.True(t, held)
				require.Equal(t, []string{lockName(task.Type(), task.Payload())}, e.keys(t))
				return err
			}))
	})
	t.Run("a limit of 3 takes a permit of prefix+limit:+key", func(t *testing.T) {
		mw := asynqmw.New(e.c, asynqmw.WithPermits(3), asynqmw.WithKeyPrefix("app:"))
		require.NoError(t, run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
			n, err := e.c.Semaphore("app:limit:"+key, 3).Available(ctx)
			require.Equal(t, 2, n)
			require.Equal(t, []string{"app:limit:" + key}, e.rdb.Keys(ctx, "app:*").Val())
			return err
		}))
	})
	t.Run("a limit and a lock of one key never exclude each other", func(t *testing.T) {
		// As during a rolling deploy from a limit of 1 to 2: the names differ,
		// so neither side sees the other's key, and Redis never answers
		// WRONGTYPE.
		require.NoError(t, run(t.Context(), asynqmw.New(e.c), task, func(ctx context.Context, _ *asynq.Task) error {
			return run(ctx, asynqmw.New(e.c, asynqmw.WithPermits(2)), task, func(context.Context, *asynq.Task) error { return nil })
		}))
	})
}

// WithPermits on a quorum lockmw.Client (three masters, go-redis default
// options), as on one Redis: five tasks with one key on a server of five
// workers, a limit of two. While two run, both permits are taken (Available
// is 0: a third could run only on a permit), the others wait, and each end
// lets another in; never more than two ran at once, and all five ran.
func TestServerLimitOnAQuorum(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // the tasks' queue
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		rdbs[i] = redistest.Start(t).NewClient()
	}
	quorum := lockmw.NewQuorum(rdbs)
	t.Cleanup(func() { _ = quorum.Close() })

	const tasks, limit = 5, 2
	var tr testsupport.Peak
	in := make(chan struct{}, tasks)
	release := make(chan struct{})
	handler := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		tr.Enter()
		defer tr.Leave()
		in <- struct{}{}
		return awaitRelease(ctx, release)
	})
	results := make(chan result, 100)
	startServer(t, e.rdb, tasks, record(results)(asynqmw.New(quorum, asynqmw.WithPermits(limit), asynqmw.WithWait(waitLimit))(handler)))
	task := asynq.NewTask("export:run", []byte(`{"tenant":"acme"}`))
	for range tasks {
		enqueue(t, e.rdb, task)
	}
	sem := quorum.Semaphore(limitName(task), limit)
	testsupport.Recv(t, in, waitLimit, "a handler's start")
	for range tasks - 1 {
		testsupport.Recv(t, in, waitLimit, "another handler's start")
		free, err := sem.Available(t.Context())
		require.NoError(t, err)
		require.Zero(t, free, "both permits taken while two tasks run")
		release <- struct{}{} // one ends: one waiter takes its permit
	}
	release <- struct{}{}
	for range tasks {
		r := testsupport.Recv(t, results, waitLimit, "a task's result")
		require.NoError(t, r.err)
	}
	require.Equal(t, limit, tr.Max(), "tasks running at once")
}
