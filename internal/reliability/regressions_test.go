package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lockmw bugs this suite found, each shown by a test that failed until
// it was fixed (lockmw commit 3ba0bb8). They stay as regression tests.

// A lease of lockmw.Forever (or any lease within 1 ms of MaxInt64) was a TTL
// of 1 ms: msCeil computed d + time.Millisecond - 1, which overflowed, and
// clamped the negative result to 1. The hold context's deadline was
// centuries away, so the holder went on while another client took the lock.
func TestRegressionLeaseForeverExpiresAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	a := lockmw.New(srv.NewClient())
	defer a.Close()
	b := lockmw.New(srv.NewClient())
	defer b.Close()
	h, err := a.Mutex("lease-forever").TryLock(ctx, 0, lockmw.Forever)
	require.NoError(t, err)
	_, err = b.Mutex("lease-forever").TryLock(ctx, 100*time.Millisecond, 0)
	if err == nil {
		assert.Error(t, h.Err(), "another client holds the lock, yet the first hold context is alive")
	}
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "a lease of Forever keeps the lock")
}

// UnlockAt far in the future expired the lock in 1 ms: the same overflow.
func TestRegressionUnlockAtFarFutureExpiresAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := lockmw.New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("unlock-at-far")
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, m.UnlockAt(h, time.Now().AddDate(1000, 0, 0)))
	ttl, err := srv.Client().PTTL(ctx, "unlock-at-far").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Hour, "the lock stays until the far-away time")
}

// Lock names x and {x} are different locks (different hashes), but
// Redisson's key rule gave them the same queue, waiter table and hand-off
// channel: "rlock_queue:{x}" either way. So unlocking x handed x to the first
// waiter queued for {x}, and that waiter was told it held {x}, while someone
// else did: a mutual-exclusion violation.
func TestRegressionNamesXAndBracedXShareTheirQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	var cs []*lockmw.Client
	for range 3 {
		c := lockmw.New(srv.NewClient())
		defer c.Close()
		cs = append(cs, c)
	}
	braced, plain := cs[0].Mutex("{k}"), cs[1].Mutex("k")
	hb, err := braced.Lock(ctx)
	require.NoError(t, err)
	hp, err := plain.Lock(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := cs[2].Mutex("{k}").TryLock(ctx, time.Second, 0)
		got <- err
	}()
	require.Eventually(t, func() bool { return queued(ctx, srv) == 1 && subscribed(ctx, srv) },
		5*time.Second, 5*time.Millisecond, "the waiter for {k} is queued and subscribed")
	require.NoError(t, plain.Unlock(hp))
	err = <-got
	held, herr := braced.IsHeld(hb)
	require.NoError(t, herr)
	require.True(t, held, "the first holder of {k} still holds it")
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "so the waiter for {k} must not get it")
}

// A re-entry whose reply did not arrive in time (the caller's deadline
// passed while the script ran; or the connection broke with no retry left)
// returned an error, but the count in Redis went up. The outer Unlock then
// returned nil yet left one level in Redis, and the watchdog renewed it for
// as long as the Client lived: nobody could take the lock, and no context
// could release it.
func TestRegressionReentryWhoseReplyIsLostLeaksALevel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	c := lockmw.New(srv.NewClient(), lockmw.WithWatchdogTimeout(600*time.Millisecond))
	defer c.Close()
	m := c.Mutex("reentry-lost")
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	in, err := m.Lock(h) // loads the re-entry script, so that the next EVALSHA runs it
	require.NoError(t, err)
	require.NoError(t, m.Unlock(in))
	require.NoError(t, srv.Pause())
	ictx, cancel := context.WithTimeout(h, 100*time.Millisecond)
	_, err = m.Lock(ictx) // sent, not answered in time; runs when the server resumes
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, srv.Resume())
	require.NoError(t, m.Unlock(h))
	other := lockmw.New(srv.NewClient())
	defer other.Close()
	_, err = other.Mutex("reentry-lost").TryLock(ctx, 2*time.Second, 0)
	assert.NoError(t, err, "after the only successful Lock was unlocked, the lock is free")
}

// Client.Mutex "never panics", but it called a nil LockOption.
func TestRegressionMutexWithNilOptionPanics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := lockmw.New(srv.NewClient())
	defer c.Close()
	assert.NotPanics(t, func() { c.Mutex("nil-option", nil) })
}

// queued counts the waiters in every rlock queue on srv, whatever the key
// layout.
func queued(ctx context.Context, srv *redistest.Server) int64 {
	keys, err := srv.Client().Keys(ctx, "rlock_queue:*").Result()
	if err != nil {
		return -1
	}
	var n int64
	for _, k := range keys {
		c, err := srv.Client().ZCard(ctx, k).Result()
		if err != nil {
			return -1
		}
		n += c
	}
	return n
}

// subscribed reports whether some client listens on a hand-off channel.
func subscribed(ctx context.Context, srv *redistest.Server) bool {
	sharded, err := srv.Client().PubSubShardChannels(ctx, "rlock_handoff:*").Result()
	plain, err2 := srv.Client().PubSubChannels(ctx, "rlock_handoff:*").Result()
	return err == nil && err2 == nil && len(sharded)+len(plain) > 0
}
