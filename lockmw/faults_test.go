package lockmw_test

import (
	"context"
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

func TestPausedRedisCallsReturnOnTime(t *testing.T) {
	t.Parallel()
	for _, o := range goRedisOptionSets {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := locktest.New(t, srv.NewClient(o.mod))
			m := c.Mutex("paused-calls")
			require.NoError(t, srv.Pause())
			defer func() { _ = srv.Resume() }()
			for _, wait := range []time.Duration{0, lockmw.Forever} {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				start := time.Now()
				_, err := m.TryLock(ctx, wait, 0)
				took := time.Since(start)
				cancel()
				assert.ErrorIs(t, err, context.DeadlineExceeded, "wait %v", wait)
				assert.Less(t, took, time.Second, "returns at the context's deadline, not after a clean-up (wait %v)", wait)
			}
			require.NoError(t, srv.Resume())
			// An abandoned attempt that reaches Redis as it resumes is undone
			// within a second of its reply.
			h, err := m.TryLock(testsupport.Ctx(t), time.Second, 0)
			require.NoError(t, err, "works again after the pause; nothing left held by the abandoned attempts")
			require.NoError(t, m.Unlock(h))
		})
	}
}

func TestFailedUnlockStopsRenewal(t *testing.T) {
	t.Parallel()
	for _, o := range goRedisOptionSets {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			const timeout = 600 * time.Millisecond
			c := locktest.New(t, srv.NewClient(o.mod), lockmw.WithWatchdogTimeout(timeout), lockmw.WithReleaseTimeout(100*time.Millisecond))
			m := c.Mutex("unlock-fails")
			h := locktest.MustLock(t, m, context.Background())
			require.NoError(t, srv.Pause())
			err := m.Unlock(h)
			require.Error(t, err, "Redis does not answer")
			assert.NotErrorIs(t, err, lockmw.ErrNotHeld)
			assert.ErrorIs(t, h.Err(), context.Canceled, "the last level's hold ends: renewal stops")
			require.NoError(t, srv.Resume())
			// A retry releases once Redis answers: each try has the 100ms
			// release timeout, which a loaded machine may miss while the
			// client dials again, so try until one is answered (a hang
			// guard, not a time limit: a machine at load 26 took over 10s).
			testsupport.Eventually(t, time.Minute, "a retry releases", func() bool {
				return m.Unlock(h) == nil
			})
			locked, err := m.IsLocked(context.Background())
			require.NoError(t, err)
			assert.False(t, locked)

			// Without a retry the lock expires, since nothing renews it.
			h = locktest.MustLock(t, m, context.Background())
			require.NoError(t, srv.Pause())
			require.Error(t, m.Unlock(h))
			require.NoError(t, srv.Resume())
			testsupport.Eventually(t, 10*time.Second, "the lock expires", func() bool {
				locked, err := m.IsLocked(context.Background())
				return err == nil && !locked
			})
		})
	}
}

func TestMutexErr(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	assert.NoError(t, c.Mutex("fine").Err())
	assert.ErrorIs(t, c.Mutex("").Err(), lockmw.ErrInvalidName)
}

// cancelHook cancels a context as the next command is sent and fails that
// command with the context's error: the caller's context ending while the
// first attempt is on the wire.
type cancelHook struct {
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (h *cancelHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.CompareAndSwap(true, false) {
			h.cancel()
			cmd.SetErr(context.Canceled)
			return context.Canceled
		}
		return next(ctx, cmd)
	}
}

func (h *cancelHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A context that ends during the first attempt gives the same answer as
// one that ends while waiting: not acquired, and why.
func TestContextEndsDuringFirstAttempt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hook := &cancelHook{}
	rdb := srv.NewClient()
	rdb.AddHook(hook)
	m := locktest.New(t, rdb).Mutex("cancelled-first")
	h := locktest.MustLock(t, m, testsupport.Ctx(t)) // past the Client's RESTORE probe
	require.NoError(t, m.Unlock(h))
	for _, wait := range []time.Duration{0, time.Second, lockmw.Forever} {
		ctx, cancel := context.WithCancel(context.Background())
		hook.cancel = cancel
		hook.armed.Store(true)
		_, err := m.TryLock(ctx, wait, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "wait %v", wait)
		assert.ErrorIs(t, err, context.Canceled, "wait %v", wait)
	}
	locked, err := m.IsLocked(testsupport.Ctx(t))
	require.NoError(t, err)
	assert.False(t, locked)
}
