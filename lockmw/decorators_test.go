package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The helpers of this file are prefixed with dec so that they never clash
// with those of the core's tests in the same package.

// decPatience bounds this file's waits for something that should happen
// soon.
const decPatience = 10 * time.Second

func decLocked(t testing.TB, m *lockmw.Mutex) bool {
	t.Helper()
	ok, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	return ok
}

type decCtxKey struct{}

var errDecBoom = errors.New("boom")

func TestWithLockHoldsTheLockAroundFn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	other := locktest.NewOn(t, srv)
	const name = "dec:around"
	m := c.Mutex(name)
	caller := context.WithValue(testsupport.Ctx(t), decCtxKey{}, "caller")

	var events []string
	err := lockmw.WithLock(caller, m, func(ctx context.Context) error {
		held, err := m.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held, "fn's context holds the lock")
		assert.Equal(t, "caller", ctx.Value(decCtxKey{}), "fn's context derives from the caller's")
		assert.True(t, decLocked(t, other.Mutex(name)), "another client sees the lock taken")
		events = append(events, "fn")
		return nil
	},
		lockmw.WithOnAcquire(func(ctx context.Context, n string) {
			assert.Equal(t, name, n)
			held, err := m.IsHeld(ctx)
			require.NoError(t, err)
			assert.True(t, held, "WithOnAcquire gets the hold context")
			events = append(events, "acquire 1")
		}),
		lockmw.WithOnAcquire(func(context.Context, string) { events = append(events, "acquire 2") }),
		lockmw.WithOnRelease(func(ctx context.Context, n string, err error) {
			assert.True(t, ctx == caller, "WithOnRelease gets the caller's context")
			assert.Equal(t, name, n)
			assert.NoError(t, err)
			assert.False(t, decLocked(t, m), "WithOnRelease runs after the release")
			events = append(events, "release 1")
		}),
		lockmw.WithOnRelease(func(context.Context, string, error) { events = append(events, "release 2") }),
	)
	require.NoError(t, err)
	assert.Equal(t, []string{"acquire 1", "acquire 2", "fn", "release 1", "release 2"}, events)
	assert.False(t, decLocked(t, m))
}

func TestDoReturnsFnsResultAndError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	m := c.Mutex("dec:do")

	t.Run("a result", func(t *testing.T) {
		n, err := lockmw.Do(ctx, m, func(ctx context.Context) (int, error) { return 42, nil })
		require.NoError(t, err)
		assert.Equal(t, 42, n)
	})
	t.Run("fn's error as it is, with the result", func(t *testing.T) {
		s, err := lockmw.Do(ctx, m, func(ctx context.Context) (string, error) { return "partial", errDecBoom })
		assert.Same(t, errDecBoom, err, "nothing else happened to the lock, so the error is fn's own")
		assert.Equal(t, "partial", s)
		assert.False(t, decLocked(t, m), "released after an error")
	})
	t.Run("WithLock returns fn's error as it is", func(t *testing.T) {
		err := lockmw.WithLock(ctx, m, func(ctx context.Context) error { return errDecBoom })
		assert.Same(t, errDecBoom, err)
		assert.False(t, decLocked(t, m))
	})
}

func TestNestedCallsOnOneNameReenter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	const name = "dec:nested"
	m := c.Mutex(name)

	// WithWait(0) on the inner calls: if they did not re-enter they would
	// fail with ErrNotAcquired instead of hanging.
	inner := lockmw.Wrap(c, func(string) string { return name }, func(ctx context.Context, _ string) (int, error) {
		return m.HoldCount(ctx)
	}, lockmw.WithWait(0))

	var counts []int
	err := lockmw.WithLock(ctx, m, func(ctx context.Context) error {
		n, err := lockmw.Do(ctx, c.Mutex(name), func(ctx context.Context) (int, error) {
			return inner(ctx, "x")
		}, lockmw.WithWait(0))
		if err != nil {
			return err
		}
		counts = append(counts, n)
		after, err := m.HoldCount(ctx)
		counts = append(counts, after)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, []int{3, 1}, counts, "three levels inside the innermost call, one after the nested calls returned")
	assert.False(t, decLocked(t, m))
}

func TestNotAcquiredDoesNotCallFn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	other := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	const name = "dec:busy"
	hctx, err := other.Mutex(name).Lock(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Mutex(name).Unlock(hctx) })

	for _, wait := range []time.Duration{0, 50 * time.Millisecond} {
		var calls atomic.Int32
		opts := []lockmw.CallOption{
			lockmw.WithWait(wait),
			lockmw.WithOnAcquire(func(context.Context, string) { calls.Add(1) }),
			lockmw.WithOnRelease(func(context.Context, string, error) { calls.Add(1) }),
		}
		calls2 := func() int32 { return calls.Load() }
		t.Run(fmt.Sprintf("WithLock with WithWait(%v)", wait), func(t *testing.T) {
			err := lockmw.WithLock(ctx, c.Mutex(name), func(context.Context) error { calls.Add(1); return nil }, opts...)
			require.ErrorIs(t, err, lockmw.ErrNotAcquired)
			var busy *lockmw.BusyError
			require.ErrorAs(t, err, &busy)
			assert.Equal(t, name, busy.Name)
			assert.Equal(t, int32(0), calls2(), "neither fn nor the callbacks ran")
		})
		t.Run(fmt.Sprintf("Do with WithWait(%v)", wait), func(t *testing.T) {
			n, err := lockmw.Do(ctx, c.Mutex(name), func(context.Context) (int, error) { calls.Add(1); return 1, nil }, opts...)
			require.ErrorIs(t, err, lockmw.ErrNotAcquired)
			assert.Zero(t, n)
			assert.Equal(t, int32(0), calls2())
		})
		t.Run(fmt.Sprintf("a wrapped call with WithWait(%v)", wait), func(t *testing.T) {
			w := lockmw.Wrap(c, func(string) string { return name }, func(context.Context, string) (int, error) { calls.Add(1); return 1, nil }, opts...)
			n, err := w(ctx, "x")
			require.ErrorIs(t, err, lockmw.ErrNotAcquired)
			assert.Zero(t, n)
			assert.Equal(t, int32(0), calls2())
		})
	}
}

func TestDefaultWaitIsForever(t *testing.T) {
	t.Parallel()
	require.Equal(t, lockmw.Forever, lockmw.DefaultWait)
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	other := locktest.NewOn(t, srv)
	rdb := srv.NewClient()
	ctx := testsupport.Ctx(t)
	const name = "dec:forever"
	queued := func() bool { return rdb.ZCard(ctx, "rlock_queue:{"+name+"}").Val() == 1 }

	t.Run("waits for the holder to release", func(t *testing.T) {
		hctx, err := other.Mutex(name).Lock(ctx)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			done <- lockmw.WithLock(ctx, c.Mutex(name), func(context.Context) error { return nil })
		}()
		testsupport.Eventually(t, decPatience, "the call waits in the queue", queued)
		require.NoError(t, other.Mutex(name).Unlock(hctx))
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting call did not get the lock")
		}
	})
	t.Run("until the caller's context ends", func(t *testing.T) {
		hctx, err := other.Mutex(name).Lock(ctx)
		require.NoError(t, err)
		defer func() { _ = other.Mutex(name).Unlock(hctx) }()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		var ran atomic.Bool
		go func() {
			done <- lockmw.WithLock(cctx, c.Mutex(name), func(context.Context) error { ran.Store(true); return nil })
		}()
		testsupport.Eventually(t, decPatience, "the call waits in the queue", queued)
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting call did not end with its context")
		}
		assert.False(t, ran.Load())
	})
}

func TestLeaseOption(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// The default watchdog timeout, far from the lease's: a short one (it
	// was 600ms) lost the hold on a loaded machine whose renewals ran late,
	// which is not this test's subject.
	const watchdog, lease = lockmw.DefaultWatchdogTimeout, 5 * time.Second
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	m := c.Mutex("dec:lease")

	for _, tc := range []struct {
		name string
		opts []lockmw.CallOption
	}{
		{"not given: the watchdog renews the lock", nil},
		{"WithLease(0): the watchdog renews the lock", []lockmw.CallOption{lockmw.WithLease(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := lockmw.WithLock(ctx, m, func(hctx context.Context) error {
				dl, _ := hctx.Deadline()
				cdl, _ := ctx.Deadline()
				assert.Equal(t, cdl, dl, "no deadline but the caller's")
				ttl, err := m.TTL(hctx)
				require.NoError(t, err)
				assert.True(t, ttl > lease && ttl <= watchdog, "TTL %v is the watchdog timeout's", ttl)
				return nil
			}, tc.opts...)
			require.NoError(t, err)
		})
	}
	t.Run("WithLease(5s): the lock expires at the lease end and fn's context has a deadline", func(t *testing.T) {
		start := time.Now()
		err := lockmw.WithLock(ctx, m, func(hctx context.Context) error {
			dl, ok := hctx.Deadline()
			require.True(t, ok)
			assert.True(t, dl.Before(start.Add(lease)), "deadline %v is before the lease end", dl.Sub(start))
			ttl, err := m.TTL(hctx)
			require.NoError(t, err)
			assert.True(t, ttl > 0 && ttl <= lease, "TTL %v is the lease's", ttl)
			return nil
		}, lockmw.WithLease(lease))
		require.NoError(t, err, "fn returned within its lease")
	})
}

func TestReleasedWhenFnPanics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	const name = "dec:panic"
	m := c.Mutex(name)

	calls := map[string]func(opts ...lockmw.CallOption){
		"WithLock": func(opts ...lockmw.CallOption) {
			_ = lockmw.WithLock(ctx, m, func(context.Context) error { panic("boom") }, opts...)
		},
		"Do": func(opts ...lockmw.CallOption) {
			_, _ = lockmw.Do(ctx, m, func(context.Context) (int, error) { panic("boom") }, opts...)
		},
		"a wrapped call": func(opts ...lockmw.CallOption) {
			w := lockmw.Wrap(c, func(string) string { return name }, func(context.Context, string) (int, error) { panic("boom") }, opts...)
			_, _ = w(ctx, "x")
		},
	}
	for what, call := range calls {
		t.Run(what, func(t *testing.T) {
			var released []error
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				call(lockmw.WithOnRelease(func(_ context.Context, n string, err error) {
					assert.Equal(t, name, n)
					released = append(released, err)
				}))
			}()
			assert.Equal(t, "boom", recovered, "the panic goes on after the release")
			assert.Equal(t, []error{nil}, released, "WithOnRelease ran once, with a clean release")
			assert.False(t, decLocked(t, m), "the lock is free after the panic")
		})
	}
}

func TestLockLostWhileFnRuns(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// A watchdog timeout short enough that a renewal (every second) finds the
	// loss soon, long enough that the key does not expire unrenewed on a
	// loaded machine before fn forces it free (with 300 ms it did, and
	// ForceUnlock found nothing to force).
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(3*time.Second))
	other := locktest.NewOn(t, srv)

	for i, tc := range []struct {
		name   string
		result func(ctx context.Context) error
		boom   bool
	}{
		{"fn returns nil", func(context.Context) error { return nil }, false},
		{"fn returns its own error", func(context.Context) error { return errDecBoom }, true},
		{"fn returns the context's cause", context.Cause, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Made once the subtest runs: a parallel subtest may wait its
			// turn longer than the context's 2 minutes on a loaded machine
			// (one made by the parent had expired: "lock not acquired:
			// context deadline exceeded").
			ctx := testsupport.Ctx(t)
			name := fmt.Sprintf("dec:lost:%d", i)
			var cause, released error
			err := lockmw.WithLock(ctx, c.Mutex(name), func(hctx context.Context) error {
				forced, err := other.Mutex(name).ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, forced)
				if err := testsupport.WaitDone(hctx, decPatience); err != nil && context.Cause(hctx) == nil {
					return err
				}
				cause = context.Cause(hctx)
				return tc.result(hctx)
			}, lockmw.WithOnRelease(func(_ context.Context, _ string, err error) { released = err }))
			assert.ErrorIs(t, cause, lockmw.ErrLockLost, "fn's context is cancelled with cause ErrLockLost")
			require.ErrorIs(t, err, lockmw.ErrLockLost)
			assert.Equal(t, tc.boom, errors.Is(err, errDecBoom), "fn's error is kept")
			assert.Equal(t, 1, strings.Count(err.Error(), "lock lost"), "the loss is told once: %v", err)
			assert.ErrorIs(t, released, lockmw.ErrLockLost, "WithOnRelease gets the release's ErrLockLost")
		})
	}
}

func TestOuterLockLossIsReportedByTheOuterCall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(3*time.Second)) // as TestLockLostWhileFnRuns
	other := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)

	var innerErr error
	err := lockmw.WithLock(ctx, c.Mutex("dec:outer"), func(octx context.Context) error {
		innerErr = lockmw.WithLock(octx, c.Mutex("dec:inner"), func(ictx context.Context) error {
			_, err := other.Mutex("dec:outer").ForceUnlock(ctx)
			require.NoError(t, err)
			if err := testsupport.WaitDone(ictx, decPatience); err != nil && context.Cause(ictx) == nil {
				return err
			}
			assert.ErrorIs(t, context.Cause(ictx), lockmw.ErrLockLost, "the inner context ends with the outer loss")
			return nil
		})
		return nil
	})
	assert.NoError(t, innerErr, "the inner lock was held throughout")
	assert.ErrorIs(t, err, lockmw.ErrLockLost, "the outer call reports its loss")
}

func TestLeaseOutlived(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	// Each subtest makes its own context once it runs: a parallel subtest
	// may wait its turn longer than the context's 2 minutes on a loaded
	// machine, and one made here had expired ("lock not acquired: context
	// deadline exceeded").

	t.Run("fn that outlives its lease returns ErrLockLost", func(t *testing.T) {
		t.Parallel()
		ctx := testsupport.Ctx(t)
		var fnErr error
		m := c.Mutex("dec:outlived")
		n, err := lockmw.Do(ctx, m, func(hctx context.Context) (int, error) {
			fnErr = testsupport.WaitDone(hctx, decPatience)
			// Outlive the key too, so that the release also finds it gone.
			testsupport.Eventually(t, decPatience, "the key expires", func() bool { return !decLocked(t, m) })
			return 7, nil
		}, lockmw.WithLease(300*time.Millisecond))
		assert.ErrorIs(t, fnErr, context.DeadlineExceeded, "fn's context ends at the lease end")
		require.ErrorIs(t, err, lockmw.ErrLockLost)
		assert.Equal(t, 1, strings.Count(err.Error(), "lock lost"), "the loss is told once: %v", err)
		assert.Equal(t, 7, n, "fn's result is still returned")
	})
	t.Run("the caller's deadline before the lease end is no loss", func(t *testing.T) {
		t.Parallel()
		ctx := testsupport.Ctx(t)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := lockmw.WithLock(cctx, c.Mutex("dec:caller-deadline"), func(hctx context.Context) error {
			return testsupport.WaitDone(hctx, decPatience)
		}, lockmw.WithLease(10*time.Second))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, lockmw.ErrLockLost)
	})
	t.Run("the caller's cancellation is no loss", func(t *testing.T) {
		t.Parallel()
		ctx := testsupport.Ctx(t)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := lockmw.WithLock(cctx, c.Mutex("dec:caller-cancel"), func(hctx context.Context) error {
			cancel()
			return testsupport.WaitDone(hctx, decPatience)
		})
		assert.Equal(t, context.Canceled, err)
	})
}

func TestCloseDuringFn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)
	m := c.Mutex("dec:close")

	started := make(chan struct{})
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-started
		_ = c.Close()
	}()
	var cause error
	err := lockmw.WithLock(ctx, m, func(hctx context.Context) error {
		close(started)
		if err := testsupport.WaitDone(hctx, decPatience); err != nil && context.Cause(hctx) == nil {
			return err
		}
		cause = context.Cause(hctx)
		return errDecBoom
	})
	testsupport.Recv(t, closed, decPatience, "Close")
	assert.ErrorIs(t, cause, lockmw.ErrClosed, "fn's context is cancelled with cause ErrClosed")
	require.ErrorIs(t, err, lockmw.ErrClosed)
	assert.ErrorIs(t, err, errDecBoom)
	assert.False(t, decLocked(t, m), "released after Close")

	err = lockmw.WithLock(ctx, m, func(context.Context) error { return nil })
	assert.ErrorIs(t, err, lockmw.ErrClosed, "a call after Close")
}

func TestFailedReleaseIsReported(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv, lockmw.WithReleaseTimeout(500*time.Millisecond))
	ctx := testsupport.Ctx(t)

	var released error
	calls := 0
	n, err := lockmw.Do(ctx, c.Mutex("dec:down"), func(context.Context) (int, error) {
		require.NoError(t, srv.Stop())
		return 7, nil
	}, lockmw.WithOnRelease(func(_ context.Context, _ string, err error) { released = err; calls++ }))
	require.Error(t, err, "a release that failed is never hidden")
	require.Equal(t, 1, calls)
	require.Error(t, released)
	assert.ErrorIs(t, err, released, "the returned error is the one WithOnRelease got")
	assert.NotErrorIs(t, released, lockmw.ErrNotHeld)
	assert.Contains(t, released.Error(), "unlock")
	assert.Equal(t, 7, n)
}

func TestWrapSameKeyRunsOneAtATime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c1, c2 := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	rdb := srv.NewClient()
	ctx := testsupport.Ctx(t)

	var cur, peak, calls atomic.Int32
	const counter = "dec:same:counter"
	// fn does a read-modify-write on Redis: without mutual exclusion,
	// concurrent calls lose updates as well as overlap.
	fn := func(ctx context.Context, i int) (int, error) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		v, err := rdb.Get(ctx, counter).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		if err := rdb.Set(ctx, counter, v+1, 0).Err(); err != nil {
			return 0, err
		}
		calls.Add(1)
		return 2 * i, nil
	}
	key := func(int) string { return "dec:same" }
	wrapped := []func(context.Context, int) (int, error){lockmw.Wrap(c1, key, fn), lockmw.Wrap(c2, key, fn)}

	const goroutines, perGoroutine = 8, 4
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			w := wrapped[g%2]
			for i := range perGoroutine {
				n, err := w(ctx, g*100+i)
				assert.NoError(t, err)
				assert.Equal(t, 2*(g*100+i), n)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), peak.Load(), "never more than one call at a time")
	assert.Equal(t, int32(goroutines*perGoroutine), calls.Load())
	v, err := rdb.Get(ctx, counter).Int()
	require.NoError(t, err)
	assert.Equal(t, goroutines*perGoroutine, v, "no update was lost")
}

// decBarrier returns a func that blocks until it has been called n times,
// or fails after 10s: calls that are serialized never all meet.
func decBarrier(n int32) func() error {
	var arrived atomic.Int32
	all := make(chan struct{})
	return func() error {
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the other calls never ran alongside")
		}
	}
}

func TestWrapDifferentKeysRunInParallel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)

	meet := decBarrier(2)
	var names sync.Map
	w := lockmw.Wrap(c, func(id string) string { return "dec:par:" + id }, func(ctx context.Context, id string) (string, error) {
		return id, meet()
	}, lockmw.WithOnAcquire(func(_ context.Context, name string) { names.Store(name, true) }))

	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			got, err := w(ctx, id)
			assert.NoError(t, err)
			assert.Equal(t, id, got)
		})
	}
	wg.Wait()
	for _, n := range []string{"dec:par:a", "dec:par:b"} {
		_, ok := names.Load(n)
		assert.True(t, ok, "locked %s", n)
	}
}

func TestWrapEmptyKeyRunsWithoutLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	caller := context.WithValue(testsupport.Ctx(t), decCtxKey{}, "caller")

	meet := decBarrier(2)
	var callbacks atomic.Int32
	w := lockmw.Wrap(c, func(string) string { return "" }, func(ctx context.Context, _ string) (int, error) {
		assert.True(t, ctx == caller, "fn gets the caller's context")
		return 1, meet()
	},
		lockmw.WithWait(0),
		lockmw.WithOnAcquire(func(context.Context, string) { callbacks.Add(1) }),
		lockmw.WithOnRelease(func(context.Context, string, error) { callbacks.Add(1) }))

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			n, err := w(caller, "x")
			assert.NoError(t, err, "calls without a key run at once")
			assert.Equal(t, 1, n)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(0), callbacks.Load(), "no lock, no callbacks")
}

func decChargeOrder(ctx context.Context, id string) (string, error) { return "charged " + id, nil }

func TestWrapNilKeyLocksTheFuncName(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	ctx := testsupport.Ctx(t)

	var name string
	var held bool
	record := lockmw.WithOnAcquire(func(hctx context.Context, n string) {
		name = n
		var err error
		held, err = c.Mutex(n).IsHeld(hctx)
		require.NoError(t, err)
	})

	t.Run("a named function", func(t *testing.T) {
		got, err := lockmw.Wrap(c, nil, decChargeOrder, record)(ctx, "42")
		require.NoError(t, err)
		assert.Equal(t, "charged 42", got)
		assert.Equal(t, "github.com/go-rlock/rlock/lockmw_test.decChargeOrder", name)
		assert.True(t, held, "the lock of that name was held")
	})
	t.Run("a closure", func(t *testing.T) {
		_, err := lockmw.Wrap(c, nil, func(context.Context, int) (int, error) { return 0, nil }, record)(ctx, 1)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(name, "github.com/go-rlock/rlock/lockmw_test.TestWrapNilKeyLocksTheFuncName.func"), "got %q", name)
		assert.True(t, held)
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	// None of these reach Redis: the client points at a closed port.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	c := lockmw.New(rdb)
	t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	ctx := testsupport.Ctx(t)
	m := c.Mutex("dec:bad")
	var ran atomic.Bool
	fn := func(context.Context) error { ran.Store(true); return nil }
	fnT := func(context.Context) (int, error) { ran.Store(true); return 1, nil }
	fnA := func(context.Context, string) (int, error) { ran.Store(true); return 1, nil }
	same := func(s string) string { return s }

	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"WithLock with a nil mutex", func() error { return lockmw.WithLock(ctx, nil, fn) }, lockmw.ErrInvalidArgument},
		{"WithLock with a nil fn", func() error { return lockmw.WithLock(ctx, m, nil) }, lockmw.ErrInvalidArgument},
		{"Do with a nil mutex", func() error { _, err := lockmw.Do(ctx, nil, fnT); return err }, lockmw.ErrInvalidArgument},
		{"Do with a nil fn", func() error { _, err := lockmw.Do[int](ctx, m, nil); return err }, lockmw.ErrInvalidArgument},
		{"WithLock with a negative wait", func() error { return lockmw.WithLock(ctx, m, fn, lockmw.WithWait(-time.Second)) }, lockmw.ErrInvalidArgument},
		{"Do with a negative lease", func() error {
			_, err := lockmw.Do(ctx, m, fnT, lockmw.WithLease(-time.Second))
			return err
		}, lockmw.ErrInvalidArgument},
		{"WithLock on a mutex with an empty name", func() error { return lockmw.WithLock(ctx, c.Mutex(""), fn) }, lockmw.ErrInvalidName},
		{"Wrap with a nil fn", func() error {
			_, err := lockmw.Wrap[string, int](c, same, nil)(ctx, "k")
			return err
		}, lockmw.ErrInvalidArgument},
		{"Wrap with a negative wait", func() error {
			_, err := lockmw.Wrap(c, same, fnA, lockmw.WithWait(-1))(ctx, "k")
			return err
		}, lockmw.ErrInvalidArgument},
		{"Wrap with a negative lease", func() error {
			_, err := lockmw.Wrap(c, same, fnA, lockmw.WithLease(-1))(ctx, "k")
			return err
		}, lockmw.ErrInvalidArgument},
		{"a wrapped call whose key has a control character", func() error {
			_, err := lockmw.Wrap(c, same, fnA)(ctx, "bad\x00key")
			return err
		}, lockmw.ErrInvalidName},
		{"a wrapped call whose key is too long", func() error {
			_, err := lockmw.Wrap(c, same, fnA)(ctx, strings.Repeat("k", lockmw.MaxNameLen+1))
			return err
		}, lockmw.ErrInvalidName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran.Store(false)
			assert.ErrorIs(t, tc.call(), tc.want)
			assert.False(t, ran.Load(), "fn did not run")
		})
	}

	t.Run("Wrap with a nil client panics at wrap time", func(t *testing.T) {
		assert.PanicsWithValue(t, "lockmw: Wrap(nil, ...): a *lockmw.Client is required", func() {
			_ = lockmw.Wrap(nil, same, fnA)
		})
	})
}
