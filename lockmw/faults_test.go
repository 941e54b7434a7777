package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPausedRedisCallsReturnOnTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
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
	h, err := m.TryLock(testsupport.Ctx(t), 0, 0)
	require.NoError(t, err, "works again after the pause; nothing left held by the abandoned attempts")
	require.NoError(t, m.Unlock(h))
}

func TestFailedUnlockStopsRenewal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const timeout = 600 * time.Millisecond
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(timeout), lockmw.WithReleaseTimeout(100*time.Millisecond))
	m := c.Mutex("unlock-fails")
	h := locktest.MustLock(t, m, context.Background())
	require.NoError(t, srv.Pause())
	err := m.Unlock(h)
	require.Error(t, err, "Redis does not answer")
	assert.NotErrorIs(t, err, lockmw.ErrNotHeld)
	assert.ErrorIs(t, h.Err(), context.Canceled, "the last level's hold ends: renewal stops")
	require.NoError(t, srv.Resume())
	require.NoError(t, m.Unlock(h), "a retry releases at once")
	locked, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)

	// Without a retry the lock expires, since nothing renews it.
	h = locktest.MustLock(t, m, context.Background())
	require.NoError(t, srv.Pause())
	require.Error(t, m.Unlock(h))
	require.NoError(t, srv.Resume())
	testsupport.Eventually(t, 3*timeout, "the lock expires", func() bool {
		locked, err := m.IsLocked(context.Background())
		return err == nil && !locked
	})
}

func TestMutexErr(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	assert.NoError(t, c.Mutex("fine").Err())
	assert.ErrorIs(t, c.Mutex("").Err(), lockmw.ErrInvalidName)
}
