package lockmw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// nilCtx is a nil context.Context, for the test of a nil acquisition context.
var nilCtx context.Context

func TestInvalidCallOptionsAreCallTimeErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m := locktest.NewOn(t, srv).Mutex("dec:invalid-options")
	ctx := testsupport.Ctx(t)
	for _, tc := range []struct {
		name string
		opt  lockmw.CallOption
	}{
		{"a nil acquisition context", lockmw.WithAcquireContext(nilCtx)},
		{"a negative minimum hold", lockmw.WithMinHold(-time.Second)},
		{"a zero first retry delay", lockmw.WithReleaseRetry(0, time.Second, 0)},
		{"a maximum retry delay under the first", lockmw.WithReleaseRetry(time.Second, time.Millisecond, 0)},
		{"negative retry tries", lockmw.WithReleaseRetry(time.Millisecond, time.Second, -1)},
	} {
		t.Run(tc.name+" is an error, not a panic, and fn does not run", func(t *testing.T) {
			ran := false
			err := lockmw.WithLock(ctx, m, func(context.Context) error { ran = true; return nil }, tc.opt)
			assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
			assert.False(t, ran)
		})
	}
}

func TestHoldErrorTellsWhatHappenedToTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)

	t.Run("nothing happened: fn's error, no HoldError", func(t *testing.T) {
		err := lockmw.WithLock(ctx, c.Mutex("dec:he:none"), func(context.Context) error { return errDecBoom })
		_, ok := errors.AsType[*lockmw.HoldError](err)
		assert.False(t, ok)
	})
	t.Run("the lock was found lost at release: Release matches ErrLockLost", func(t *testing.T) {
		const name = "dec:he:lost"
		err := lockmw.WithLock(ctx, c.Mutex(name), func(context.Context) error {
			_, err := other.Mutex(name).ForceUnlock(ctx)
			require.NoError(t, err)
			return errDecBoom
		}, lockmw.WithLease(time.Hour)) // no renewal: only the release finds it gone
		he, ok := errors.AsType[*lockmw.HoldError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, name, he.Name)
		assert.Same(t, errDecBoom, he.Err)
		assert.NoError(t, he.Lost, "renewal did not see it")
		assert.ErrorIs(t, he.Release, lockmw.ErrLockLost)
		assert.ErrorIs(t, err, errDecBoom)
		assert.ErrorIs(t, err, lockmw.ErrLockLost)
	})
	t.Run("the release failed: Release is the Redis error, Lost nil", func(t *testing.T) {
		rdb := srv.NewClient()
		hook := &locktest.FailHook{}
		rdb.AddHook(hook)
		down := locktest.New(t, rdb)
		err := lockmw.WithLock(ctx, down.Mutex("dec:he:release"), func(context.Context) error {
			hook.On.Store(true)
			return nil
		})
		hook.On.Store(false)
		he, ok := errors.AsType[*lockmw.HoldError](err)
		require.True(t, ok, "%v", err)
		assert.NoError(t, he.Err)
		assert.NoError(t, he.Lost)
		assert.ErrorIs(t, he.Release, locktest.ErrInjected)
	})
}

// WithAcquireContext ends the acquisition, whatever Redis does, and nothing
// else: the hold context outlives it.
func TestAcquireContextBoundsTheAcquisitionOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)

	t.Run("the hold outlives the acquisition context", func(t *testing.T) {
		c := locktest.NewOn(t, srv)
		actx, cancel := context.WithCancel(ctx)
		err := lockmw.WithLock(ctx, c.Mutex("dec:actx:outlive"), func(hctx context.Context) error {
			cancel()
			dl, ok := hctx.Deadline()
			cdl, cok := ctx.Deadline()
			assert.Equal(t, cok, ok, "the hold context has the caller's deadline")
			assert.Equal(t, cdl, dl)
			require.Error(t, testsupport.WaitDone(hctx, 100*time.Millisecond))
			assert.NoError(t, hctx.Err(), "the acquisition context's end does not end the hold")
			return hctx.Err()
		}, lockmw.WithAcquireContext(actx))
		assert.NoError(t, err)
	})
	t.Run("an ended acquisition context runs nothing", func(t *testing.T) {
		c := locktest.NewOn(t, srv)
		actx, cancel := context.WithCancelCause(ctx)
		cause := errors.New("gave up")
		cancel(cause)
		err := lockmw.WithLock(ctx, c.Mutex("dec:actx:ended"), func(context.Context) error {
			t.Error("fn ran")
			return nil
		}, lockmw.WithAcquireContext(actx))
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, cause, "the cause is joined, not swallowed")
	})
	t.Run("a paused Redis is given up at the acquisition deadline", func(t *testing.T) {
		paused := redistest.Start(t)
		// go-redis and lockmw's clean-up would wait 20s: the call must not.
		rdb := paused.NewClient(func(o *redis.Options) { o.ReadTimeout = 20 * time.Second })
		c := locktest.New(t, rdb, lockmw.WithReleaseTimeout(20*time.Second))
		m := c.Mutex("dec:actx:paused")
		require.NoError(t, paused.Pause())
		actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		errs := make(chan error, 1)
		go func() {
			errs <- lockmw.WithLock(ctx, m, func(context.Context) error { return nil }, lockmw.WithAcquireContext(actx))
		}()
		var err error
		select {
		case err = <-errs:
		case <-time.After(5 * time.Second):
		}
		require.NoError(t, paused.Resume())
		require.ErrorIs(t, err, context.DeadlineExceeded, "returned before the read timeout")
		assert.NotErrorIs(t, err, lockmw.ErrNotAcquired)
		testsupport.Eventually(t, decPatience, "the abandoned attempt leaves no lock", func() bool { return !decLocked(t, m) })
	})
}

func TestMinHoldKeepsTheLockAfterAShortFn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)

	t.Run("by default the lock is free when the call returns", func(t *testing.T) {
		m := c.Mutex("dec:minhold:default")
		require.NoError(t, lockmw.WithLock(ctx, m, func(context.Context) error { return nil }))
		assert.False(t, decLocked(t, m))
	})
	t.Run("a short fn keeps it until the minimum hold, unrenewed", func(t *testing.T) {
		m := c.Mutex("dec:minhold:short")
		require.NoError(t, lockmw.WithLock(ctx, m, func(context.Context) error { return nil }, lockmw.WithMinHold(time.Hour)))
		ttl, err := m.TTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, time.Hour, "expires at the start plus the minimum hold")
		assert.Greater(t, ttl, 59*time.Minute, "not the watchdog's TTL")
		_, err = m.ForceUnlock(ctx)
		require.NoError(t, err)
	})
}

func TestReleaseRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	for _, tc := range []struct {
		name    string
		opts    []lockmw.CallOption
		retried bool
	}{
		{"by default a failed release is not retried", nil, false},
		{"WithReleaseRetry retries it until it succeeds", []lockmw.CallOption{lockmw.WithReleaseRetry(10*time.Millisecond, 40*time.Millisecond, 0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := srv.NewClient()
			hook := &locktest.FailHook{}
			rdb.AddHook(hook)
			c := locktest.New(t, rdb)
			m := c.Mutex("dec:retry:" + tc.name)
			err := lockmw.WithLock(ctx, m, func(context.Context) error { hook.On.Store(true); return nil }, tc.opts...)
			require.ErrorIs(t, err, locktest.ErrInjected, "the first release failed and is reported")
			hook.On.Store(false)
			if tc.retried {
				testsupport.Eventually(t, decPatience, "a retry releases the lock", func() bool { return !decLocked(t, m) })
				return
			}
			time.Sleep(200 * time.Millisecond) // what a retry would have had
			assert.True(t, decLocked(t, m), "the key stays until it expires")
		})
	}
}
