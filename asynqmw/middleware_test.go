package asynqmw_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
)

// These tests call the middleware directly, as asynq's worker would, on a
// real redis-server; server_test.go runs it inside asynq servers.

func run(ctx context.Context, mw asynq.MiddlewareFunc, task *asynq.Task, h func(context.Context, *asynq.Task) error) error {
	return mw(asynq.HandlerFunc(h)).ProcessTask(ctx, task)
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	type acq struct {
		name string
		wait time.Duration
	}
	acqs := make(chan acq, 10)
	e := newEnv(t, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, ev lockmw.AcquireStartEvent) context.Context {
			acqs <- acq{ev.Name, ev.Wait}
			return nil
		},
	}))
	task := asynq.NewTask("email:send", []byte(`{"to":"a@example.com"}`))
	mw := asynqmw.New(e.c)

	var held bool
	err := run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
		var err error
		held, err = e.c.Mutex(lockName(task.Type(), task.Payload())).IsHeld(ctx)
		return err
	})
	require.NoError(t, err)

	a := testsupport.Recv(t, acqs, waitLimit, "an AcquireStart event")
	t.Run("the key is the type and 32 hex digits of the payload's SHA-256, under asynq:lock:", func(t *testing.T) {
		require.Equal(t, lockName(task.Type(), task.Payload()), a.name)
		require.Equal(t, "asynq:lock:"+asynqmw.DefaultKey(t.Context(), task), a.name)
		require.Len(t, strings.TrimPrefix(a.name, "asynq:lock:email:send:"), asynqmw.HashLen)
		require.Equal(t, "asynq:", asynqmw.DefaultKeyPrefix)
	})
	t.Run("the wait is DefaultWait, 0: a single attempt", func(t *testing.T) {
		require.Equal(t, time.Duration(0), asynqmw.DefaultWait)
		require.Equal(t, asynqmw.DefaultWait, a.wait)
	})
	t.Run("the handler runs with the hold context", func(t *testing.T) {
		require.True(t, held)
	})
	t.Run("the lock is released and no dedup mark is left", func(t *testing.T) {
		require.Empty(t, e.keys(t))
	})
	t.Run("a busy key is retried (Retry), without waiting", func(t *testing.T) {
		other := e.other(t)
		hctx, err := other.Mutex(a.name).Lock(t.Context())
		require.NoError(t, err)
		defer func() { require.NoError(t, other.Mutex(a.name).Unlock(hctx)) }()

		ran := false
		err = run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { ran = true; return nil })
		require.False(t, ran)
		require.True(t, asynqmw.IsBusy(err), "%v", err)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		var be *lockmw.BusyError
		require.ErrorAs(t, err, &be)
		require.Equal(t, a.name, be.Name)
		require.Equal(t, time.Duration(0), testsupport.Recv(t, acqs, waitLimit, "an AcquireStart event").wait)
	})
	t.Run("two runs of the same task both run: no de-duplication", func(t *testing.T) {
		var runs atomic.Int32
		for range 2 {
			require.NoError(t, run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { runs.Add(1); return nil }))
		}
		require.EqualValues(t, 2, runs.Load())
		require.Empty(t, e.keys(t))
	})
}

func TestKeyPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("p"))
	key := asynqmw.DefaultKey(t.Context(), task)
	mw := asynqmw.New(e.c, asynqmw.WithKeyPrefix("app:"), asynqmw.WithDedupWindow(time.Minute))
	require.NoError(t, run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
		held, err := e.c.Mutex("app:lock:" + key).IsHeld(ctx)
		require.True(t, held)
		return err
	}))
	require.Equal(t, []string{"app:done:" + key}, e.rdb.Keys(t.Context(), "app:*").Val())
}

func TestCustomKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	byUser := asynqmw.WithKey(func(_ context.Context, t *asynq.Task) string { return "user:" + string(t.Payload()[:2]) })
	mw := asynqmw.New(e.c, byUser)

	t.Run("tasks with the same key exclude each other", func(t *testing.T) {
		in, out := make(chan struct{}), make(chan struct{})
		release := sync.OnceFunc(func() { close(out) })
		defer release()
		errc := make(chan error, 1)
		go func() {
			errc <- run(t.Context(), mw, asynq.NewTask("a", []byte("u1-first")), func(context.Context, *asynq.Task) error {
				close(in)
				<-out
				return nil
			})
		}()
		<-in
		err := run(t.Context(), mw, asynq.NewTask("b", []byte("u1-second")), func(context.Context, *asynq.Task) error { return nil })
		require.True(t, asynqmw.IsBusy(err), "%v", err)
		require.ErrorContains(t, err, `"asynq:lock:user:u1"`)
		release()
		require.NoError(t, testsupport.Recv(t, errc, waitLimit, "run's error"))
	})
	t.Run("an empty key runs the task without a lock", func(t *testing.T) {
		mw := asynqmw.New(e.c, asynqmw.WithKey(func(context.Context, *asynq.Task) string { return "" }))
		task := asynq.NewTask("same", []byte("same"))
		in := make(chan struct{}, 2)
		both := make(chan struct{})
		errc := make(chan error, 2)
		for range 2 {
			go func() {
				errc <- run(t.Context(), mw, task, func(context.Context, *asynq.Task) error {
					in <- struct{}{}
					select {
					case <-both:
						return nil
					case <-time.After(waitLimit):
						return errors.New("the other run never started")
					}
				})
			}()
		}
		testsupport.Recv(t, in, waitLimit, "a handler's start")
		testsupport.Recv(t, in, waitLimit, "a handler's start")
		close(both)
		require.NoError(t, testsupport.Recv(t, errc, waitLimit, "run's error"))
		require.NoError(t, testsupport.Recv(t, errc, waitLimit, "run's error"))
		require.Empty(t, e.keys(t))
	})
	t.Run("an invalid key is an error that archives the task, not a panic", func(t *testing.T) {
		for name, key := range map[string]string{
			"control character": "bad\nkey",
			"too long":          strings.Repeat("k", lockmw.MaxNameLen),
			"not UTF-8":         "\xff",
		} {
			t.Run(name, func(t *testing.T) {
				mw := asynqmw.New(e.c, asynqmw.WithKey(func(context.Context, *asynq.Task) string { return key }))
				ran := false
				err := run(t.Context(), mw, asynq.NewTask("t", nil), func(context.Context, *asynq.Task) error { ran = true; return nil })
				require.False(t, ran)
				require.ErrorIs(t, err, lockmw.ErrInvalidName)
				require.ErrorIs(t, err, asynq.SkipRetry)
				require.False(t, asynqmw.IsBusy(err))
				require.ErrorContains(t, err, `asynqmw: task "t": invalid key`)
			})
		}
	})
}

func TestBusy(t *testing.T) {
	t.Parallel()
	waits := make(chan time.Duration, 10)
	e := newEnv(t, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, ev lockmw.AcquireStartEvent) context.Context {
			waits <- ev.Wait
			return nil
		},
	}))
	task := asynq.NewTask("t", []byte("busy"))
	name := lockName(task.Type(), task.Payload())
	other := e.other(t)
	// hold takes the key as another process would, until unlock or the
	// end of the subtest.
	hold := func(t *testing.T) context.Context {
		hctx, err := other.Mutex(name).Lock(t.Context())
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Mutex(name).Unlock(hctx) })
		return hctx
	}
	unlock := func(t *testing.T, hctx context.Context) { require.NoError(t, other.Mutex(name).Unlock(hctx)) }
	neverRun := func(context.Context, *asynq.Task) error { return errors.New("ran while busy") }

	t.Run("Skip returns nil without running the handler", func(t *testing.T) {
		hold(t)
		require.NoError(t, run(t.Context(), asynqmw.New(e.c, asynqmw.WithOnBusy(asynqmw.Skip)), task, neverRun))
		testsupport.Recv(t, waits, waitLimit, "an AcquireStart event's wait")
	})
	t.Run("WithWait waits for the key", func(t *testing.T) {
		hctx := hold(t)
		errc := make(chan error, 1)
		go func() {
			errc <- run(t.Context(), asynqmw.New(e.c, asynqmw.WithWait(waitLimit)), task, func(context.Context, *asynq.Task) error { return nil })
		}()
		require.Equal(t, waitLimit, testsupport.Recv(t, waits, waitLimit, "an AcquireStart event's wait"))
		unlock(t, hctx)
		require.NoError(t, testsupport.Recv(t, errc, waitLimit, "run's error"))
	})
	t.Run("a key busy for the whole wait is busy", func(t *testing.T) {
		hold(t)
		err := run(t.Context(), asynqmw.New(e.c, asynqmw.WithWait(50*time.Millisecond)), task, neverRun)
		require.True(t, asynqmw.IsBusy(err), "%v", err)
		require.Equal(t, 50*time.Millisecond, testsupport.Recv(t, waits, waitLimit, "an AcquireStart event's wait"))
	})
	t.Run("Skip does not drop a task whose context ended while waiting", func(t *testing.T) {
		hold(t)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			errc <- run(ctx, asynqmw.New(e.c, asynqmw.WithWait(waitLimit), asynqmw.WithOnBusy(asynqmw.Skip)), task, neverRun)
		}()
		testsupport.Recv(t, waits, waitLimit, "an AcquireStart event's wait")
		cancel()
		err := testsupport.Recv(t, errc, waitLimit, "run's error")
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	})
}

func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	task := asynq.NewTask("t", []byte("errors"))
	name := lockName(task.Type(), task.Payload())
	mw := asynqmw.New(e.c, asynqmw.WithDedupWindow(time.Minute))

	t.Run("the handler's error is returned and leaves no mark", func(t *testing.T) {
		boom := errors.New("boom")
		err := run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { return boom })
		require.ErrorIs(t, err, boom)
		require.Empty(t, e.keys(t))
	})
	t.Run("a panicking handler releases the lock and leaves no mark", func(t *testing.T) {
		func() {
			defer func() { require.Equal(t, "boom", recover()) }()
			_ = run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { panic("boom") })
		}()
		require.Empty(t, e.keys(t))
		locked, err := e.c.Mutex(name).IsLocked(t.Context())
		require.NoError(t, err)
		require.False(t, locked)
	})
	t.Run("after failures the task still runs", func(t *testing.T) {
		ran := false
		require.NoError(t, run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { ran = true; return nil }))
		require.True(t, ran)
	})
}

func TestDedupWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const window = 300 * time.Millisecond
	mw := asynqmw.New(e.c, asynqmw.WithDedupWindow(window))
	task := asynq.NewTask("t", []byte("dedup"))
	mark := doneKey(task.Type(), task.Payload())
	var runs atomic.Int32
	h := func(context.Context, *asynq.Task) error { runs.Add(1); return nil }

	require.NoError(t, run(t.Context(), mw, task, h))
	require.EqualValues(t, 1, runs.Load())
	ttl := e.rdb.PTTL(t.Context(), mark).Val()
	require.True(t, ttl > 0 && ttl <= window, "mark TTL %v", ttl)

	require.NoError(t, run(t.Context(), mw, task, h))
	require.EqualValues(t, 1, runs.Load(), "a re-run within the window ran")
	require.NoError(t, run(t.Context(), mw, asynq.NewTask("t", []byte("other")), h))
	require.EqualValues(t, 2, runs.Load(), "another key was skipped")

	deadline := time.Now().Add(waitLimit)
	for e.rdb.Exists(t.Context(), mark).Val() == 1 {
		require.True(t, time.Now().Before(deadline), "mark never expired")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, run(t.Context(), mw, task, h))
	require.EqualValues(t, 3, runs.Load(), "a run after the window was skipped")
}

func TestLockLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lockmw.WithWatchdogTimeout(300*time.Millisecond))
	task := asynq.NewTask("t", []byte("lost"))
	name := lockName(task.Type(), task.Payload())
	mark := doneKey(task.Type(), task.Payload())
	other := e.other(t)
	mw := asynqmw.New(e.c, asynqmw.WithDedupWindow(time.Minute))
	forceUnlock := func(t *testing.T) {
		ok, err := other.Mutex(name).ForceUnlock(t.Context())
		require.NoError(t, err)
		require.True(t, ok)
	}

	t.Run("a handler that returns its context's error fails with ErrLockLost", func(t *testing.T) {
		err := run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
			forceUnlock(t)
			return testsupport.WaitDone(ctx, waitLimit)
		})
		require.ErrorIs(t, err, lockmw.ErrLockLost)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualValues(t, 0, e.rdb.Exists(t.Context(), mark).Val())
	})
	t.Run("a handler that returns nil after the loss still fails with ErrLockLost", func(t *testing.T) {
		err := run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
			forceUnlock(t)
			_ = testsupport.WaitDone(ctx, waitLimit)
			require.ErrorIs(t, context.Cause(ctx), lockmw.ErrLockLost)
			return nil
		})
		require.ErrorIs(t, err, lockmw.ErrLockLost)
		require.EqualValues(t, 0, e.rdb.Exists(t.Context(), mark).Val())
	})
}

// A loss that renewal has not noticed yet shows at Unlock: the attempt fails
// so asynq retries, and the dedup mark written before Unlock makes the retry
// a no-op.
func TestLockLostFoundAtUnlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // 30s watchdog: no renewal during the test
	task := asynq.NewTask("t", []byte("unlock"))
	other := e.other(t)
	var runs atomic.Int32
	for _, dedup := range []time.Duration{0, time.Minute} {
		mw := asynqmw.New(e.c, asynqmw.WithDedupWindow(dedup))
		err := run(t.Context(), mw, task, func(ctx context.Context, _ *asynq.Task) error {
			runs.Add(1)
			_, err := other.Mutex(lockName(task.Type(), task.Payload())).ForceUnlock(ctx)
			return err
		})
		require.ErrorIs(t, err, lockmw.ErrLockLost)
	}
	require.NoError(t, run(t.Context(), asynqmw.New(e.c, asynqmw.WithDedupWindow(time.Minute)), task,
		func(context.Context, *asynq.Task) error { runs.Add(1); return nil }))
	require.EqualValues(t, 2, runs.Load(), "the retry after a successful run with a mark ran")
}

func TestClientClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.other(t)
	task := asynq.NewTask("t", []byte("closed"))
	err := run(t.Context(), asynqmw.New(c), task, func(ctx context.Context, _ *asynq.Task) error {
		go func() { _ = c.Close() }()
		return testsupport.WaitDone(ctx, waitLimit)
	})
	require.ErrorIs(t, err, lockmw.ErrClosed)
	require.ErrorIs(t, err, context.Canceled)
	locked, lerr := e.c.Mutex(lockName(task.Type(), task.Payload())).IsLocked(t.Context())
	require.NoError(t, lerr)
	require.False(t, locked, "the lock was not released after Close")

	err = run(t.Context(), asynqmw.New(c), task, func(context.Context, *asynq.Task) error { return nil })
	require.ErrorIs(t, err, lockmw.ErrClosed)
	require.False(t, asynqmw.IsBusy(err))
}
