package redisson

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watchdog is the tests' lockWatchdogTimeout: renewals every 667 ms, with
// 1.3 s of slack for a late one on a loaded machine (900 ms, with 600 ms
// of slack, lost a reader's keys at a load of 15).
const watchdog = 2 * time.Second

// renewing is how many names the task renews holds of.
func (t *renewalTask) renewing() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

func TestNewClientRefusesANonPositiveWatchdog(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "redisson: WithWatchdogTimeout(0s): must be positive", func() {
		NewClient(nil, WithWatchdogTimeout(0))
	})
}

// Past the lease, by the watchdog's own count of renewals rather than a
// clock: four renewals are 1.2 s after the hold began, the lease 0.9 s.
func TestWatchdogKeepsAReaderAlive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcessCounting(t, srv, readRenewScriptSource, WithWatchdogTimeout(watchdog))
	r := a.GetReadWriteLock("cache").ReadLock()
	field := a.ID() + ":1"
	require.NoError(t, r.Lock(ctx, 1, 0))
	require.NoError(t, r.Lock(ctx, 1, 0))
	assert.LessOrEqual(t, pttl(t, ctx, srv, "cache"), watchdog, "the lease is the watchdog timeout")

	testsupport.Eventually(t, 30*time.Second, "four renewals", func() bool { return a.acquires.count() >= 4 })
	assert.Equal(t, map[string]string{"mode": "read", field: "2"}, hashOf(t, ctx, srv, "cache"))
	for _, key := range []string{"cache", ReadTimeoutKey("cache", field, 1), ReadTimeoutKey("cache", field, 2)} {
		d := pttl(t, ctx, srv, key)
		assert.Greater(t, d, time.Duration(0), "%s alive", key)
		assert.LessOrEqual(t, d, watchdog, "%s renewed to the watchdog timeout", key)
	}

	require.NoError(t, r.Unlock(ctx, 1))
	assert.Equal(t, 1, a.renewal.read.renewing(), "one level left to renew")
	require.NoError(t, r.Unlock(ctx, 1))
	assert.Zero(t, a.renewal.read.renewing(), "the last unlock stops the renewal")
	assert.Empty(t, hashOf(t, ctx, srv, "cache"))
}

func TestWatchdogKeepsAWriterAlive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcessCounting(t, srv, lockRenewScriptSource, WithWatchdogTimeout(watchdog))
	w := a.GetReadWriteLock("ledger").WriteLock()
	require.NoError(t, w.Lock(ctx, 1, 0))

	testsupport.Eventually(t, 30*time.Second, "four renewals", func() bool { return a.acquires.count() >= 4 })
	assert.Equal(t, map[string]string{"mode": "write", a.ID() + ":1:write": "1"}, hashOf(t, ctx, srv, "ledger"))
	assert.Greater(t, pttl(t, ctx, srv, "ledger"), time.Duration(0))
	require.NoError(t, w.Unlock(ctx, 1))
	assert.Zero(t, a.renewal.lock.renewing())
}

func TestWatchdogRenewsOnlyHoldsTakenWithoutALease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcess(t, srv)
	r := a.GetReadWriteLock("leased").ReadLock()
	require.NoError(t, r.Lock(ctx, 1, time.Minute))
	assert.Zero(t, a.renewal.read.renewing())
	require.NoError(t, r.Unlock(ctx, 1))
}

// RedissonReadLock.cancelExpirationRenewal calls RedissonLock's first, which
// takes the thread off the write renewal too: a writer that takes and
// releases the read side is no longer renewed, though it holds the write
// side. The helper keeps this, as Redisson 3.44+ behaves.
func TestAReadUnlockStopsTheSameThreadsWriteRenewal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcess(t, srv)
	w, r := a.GetReadWriteLock("quirk").WriteLock(), a.GetReadWriteLock("quirk").ReadLock()
	require.NoError(t, w.Lock(ctx, 1, 0))
	require.NoError(t, r.Lock(ctx, 1, 0))
	require.Equal(t, 1, a.renewal.lock.renewing())
	require.NoError(t, r.Unlock(ctx, 1))
	assert.Zero(t, a.renewal.lock.renewing(), "the write hold is no longer renewed")
	assert.Equal(t, "write", hashOf(t, ctx, srv, "quirk")["mode"])
	require.NoError(t, w.Unlock(ctx, 1))
}
