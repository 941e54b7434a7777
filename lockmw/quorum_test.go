package lockmw_test

import (
	"context"
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

// quorum starts n independent masters and returns them with go-redis clients
// that fail fast on a paused or stopped server.
func quorum(t *testing.T, n int) ([]*redistest.Server, []redis.UniversalClient) {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	rdbs := make([]redis.UniversalClient, n)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient(func(o *redis.Options) {
			o.ReadTimeout, o.WriteTimeout, o.DialTimeout = 400*time.Millisecond, 400*time.Millisecond, 400*time.Millisecond
			o.MaxRetries = -1
		})
	}
	return srvs, rdbs
}

func newQuorum(t *testing.T, rdbs []redis.UniversalClient, opts ...lockmw.Option) *lockmw.Client {
	c := lockmw.NewQuorum(rdbs, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func keyOn(t *testing.T, srv *redistest.Server, key string) bool {
	n, err := srv.Client().Exists(context.Background(), key).Result()
	require.NoError(t, err)
	return n == 1
}

// keysOn counts the masters that have key.
func keysOn(t *testing.T, srvs []*redistest.Server, key string) int {
	n := 0
	for _, s := range srvs {
		if keyOn(t, s, key) {
			n++
		}
	}
	return n
}

func TestQuorumBasics(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 5)
	ctx := testsupport.Ctx(t)
	a, b := newQuorum(t, rdbs), newQuorum(t, rdbs)
	m := a.Mutex("q-basic", lockmw.WithFencing())
	h := locktest.MustLock(t, m, ctx)
	assert.GreaterOrEqual(t, keysOn(t, srvs, "q-basic"), 3, "held on a majority when Lock returns")
	testsupport.Eventually(t, 30*time.Second, "held on every master", func() bool { return keysOn(t, srvs, "q-basic") == 5 })
	inner := locktest.MustLock(t, m, h)
	n, err := m.HoldCount(inner)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	tok, ok := m.Token(h)
	require.True(t, ok)
	assert.Positive(t, tok)
	_, err = b.Mutex("q-basic").TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)

	// A waiter on the other quorum client is woken by the unlock.
	got := make(chan error, 1)
	go func() {
		hb, err := b.Mutex("q-basic").TryLock(ctx, 10*time.Second, 0)
		if err == nil {
			err = b.Mutex("q-basic").Unlock(hb)
		}
		got <- err
	}()
	require.NoError(t, m.Unlock(inner))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	require.NoError(t, m.Unlock(h))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("quorum waiter not woken")
	}
	testsupport.Eventually(t, 30*time.Second, "released on every master", func() bool { return keysOn(t, srvs, "q-basic") == 0 })
}

func TestQuorumSurvivesMinorityAndLosesMajority(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 5)
	ctx := testsupport.Ctx(t)
	// Renewed every second: a round may be 2 s late on a loaded machine
	// (with 1.5 s, 0.5 s, rounds 1 s late lost the hold).
	const timeout = 3 * time.Second
	const patience = 30 * time.Second // a hang guard, not a time limit
	rn := newRenewals("q-held")
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(timeout), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	h := locktest.MustLock(t, c.Mutex("q-held"), ctx)

	require.NoError(t, srvs[0].Stop())
	require.NoError(t, srvs[1].Stop())
	for range 4 { // renewals go on with 3 of 5, past a watchdog timeout
		rn.await(t, h, "a renewal with 3 of 5")
	}
	require.NoError(t, h.Err(), "a hold survives losing a minority")
	h2, err := c.Mutex("q-new").TryLock(ctx, 0, 0)
	require.NoError(t, err, "3 of 5 masters still acquire")

	require.NoError(t, srvs[2].Stop())
	testsupport.Done(t, h, patience, "a hold that lost its majority is lost")
	assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
	testsupport.Done(t, h2, patience, "every hold")
	_, err = c.Mutex("q-other").TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "2 of 5 masters cannot acquire")
}

// TestQuorumFencingAcrossMajorities is the case where per-master counters are
// not enough: hold 1 on {A,B}, hold 2 on {B,C}, hold 3 on {A,C}.
func TestQuorumFencingAcrossMajorities(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 3)
	ctx := testsupport.Ctx(t)
	const timeout = 1500 * time.Millisecond
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(timeout))
	m := c.Mutex("q-fenced", lockmw.WithFencing())
	var tokens []int64
	for _, down := range []int{2, 0, 1} {
		require.NoError(t, srvs[down].Pause())
		h := locktest.MustLock(t, m, ctx)
		tok, ok := m.Token(h)
		require.True(t, ok)
		tokens = append(tokens, tok)
		require.NoError(t, m.Unlock(h))
		require.NoError(t, srvs[down].Resume())
		// The paused master may run the requests it got late; let them expire.
		testsupport.Eventually(t, 5*time.Second, "no stale lock on the resumed master", func() bool {
			return !keyOn(t, srvs[down], "q-fenced")
		})
	}
	assert.Less(t, tokens[0], tokens[1])
	assert.Less(t, tokens[1], tokens[2], "strictly increasing across majorities: %v", tokens)
}

func TestNewQuorumPanics(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { lockmw.NewQuorum(nil) })
	assert.Panics(t, func() { lockmw.NewQuorum([]redis.UniversalClient{nil}) })
	assert.Panics(t, func() { lockmw.NewQuorum([]redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{})}) })
}

// An attempt that a majority won only after the validity time (a loaded
// machine, a slow network; here a lease shorter than a round trip) is undone
// and counts as a failure a wait rides out: TryLock goes on trying until its
// wait ends, then reports the lock not acquired.
func TestQuorumWaitOutlastsAnAttemptPastItsValidity(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 3)
	ctx := testsupport.Ctx(t)
	c := newQuorum(t, rdbs)
	const wait = 300 * time.Millisecond
	start := time.Now()
	_, err := c.Mutex("q-too-slow").TryLock(ctx, wait, time.Millisecond)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.GreaterOrEqual(t, time.Since(start), wait, "the wait went on: %v", err)
	testsupport.Eventually(t, 30*time.Second, "every attempt undone", func() bool { return keysOn(t, srvs, "q-too-slow") == 0 })
}
