package lockmw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redlock's restart problem: a hold on masters A and B (C unreachable for
// its Client), and B killed and restarted empty. Another Client that knew B
// before sees its new run ID and leaves it out of acquisitions for a
// watchdog timeout: it cannot win B and C while the first holder still
// believes it holds, so there is never a second owner. The first holder
// finds its majority gone and loses the lock; the other then takes it. The
// restarted master never gets the first holder's field back: renewals only
// extend what is there. The same for every kind on a quorum: a semaphore's
// only permit, and a read hold against a writer.
func TestQuorumRestartedMasterIsLeftOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first func(c *lockmw.Client, name string) lockmw.Locker
		other func(c *lockmw.Client, name string) lockmw.Locker
	}{
		{"mutex",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Mutex(name) },
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Mutex(name) }},
		{"semaphore",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Semaphore(name, 1) },
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Semaphore(name, 1) }},
		{"read-write",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.RWMutex(name).RLocker() },
			func(c *lockmw.Client, name string) lockmw.Locker { return c.RWMutex(name) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			restartedMasterLeftOut(t, "q-restart-"+tc.name, tc.first, tc.other)
		})
	}
}

func restartedMasterLeftOut(t *testing.T, name string, firstLock, otherLock func(c *lockmw.Client, name string) lockmw.Locker) {
	const watchdog = 2 * time.Second
	srvs := make([]*redistest.Server, 3)
	direct := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		direct[i] = srvs[i].NewClient()
	}
	proxy, err := faultproxy.Start(srvs[2].Addr())
	require.NoError(t, err)
	viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = viaProxy.Close() })
	ctx := testsupport.Ctx(t)
	first := newQuorum(t, []redis.UniversalClient{direct[0], direct[1], viaProxy}, lockmw.WithWatchdogTimeout(watchdog))
	other := newQuorum(t, direct, lockmw.WithWatchdogTimeout(watchdog))
	// other learns B's run ID: with A paused, its Lock and Unlock need B.
	require.NoError(t, srvs[0].Pause())
	warm := other.Mutex(name + "-warm")
	require.NoError(t, warm.Unlock(locktest.MustLock(t, warm, ctx)))
	require.NoError(t, srvs[0].Resume())
	require.NoError(t, proxy.Close()) // C unreachable for first

	fl, ol := firstLock(first, name), otherLock(other, name)
	h1, err := fl.Lock(ctx)
	require.NoError(t, err)
	// firstOn reports whether first's field is in any of srv's hashes: the
	// lock's, a permit's or a reader's.
	firstOn := func(srv *redistest.Server) bool {
		keys, err := srv.Client().Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			fields, err := srv.Client().HKeys(ctx, k).Result()
			if err != nil { // not a hash
				continue
			}
			for _, f := range fields {
				if strings.HasPrefix(f, first.ID()+":") {
					return true
				}
			}
		}
		return false
	}
	require.True(t, firstOn(srvs[0]) && firstOn(srvs[1]), "held on A and B")
	require.False(t, firstOn(srvs[2]), "not on C")
	// The first hold's last renewal that counted B was sent before the
	// kill, so its majority was gone a watchdog timeout after killed at the
	// latest. Its context ends by a timer at that moment, which a starved
	// machine runs late: a try sent after it that wins beside a context not
	// ended yet is that lag, not a second owner.
	killed := time.Now()
	require.NoError(t, srvs[1].Kill())
	require.NoError(t, srvs[1].Restart())

	tries := 0
	for h1.Err() == nil {
		sent := time.Now()
		h2, err := ol.TryLock(ctx, 0, 0)
		if err == nil {
			held := h1.Err() == nil
			_ = ol.Unlock(h2)
			require.False(t, held && sent.Before(killed.Add(watchdog)),
				"a second owner: taken while the first holder still holds (try %d, sent %v after the kill)", tries, sent.Sub(killed))
			break
		}
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		assert.False(t, firstOn(srvs[1]), "the restarted master got the first holder's field back")
		tries++
		timer := time.NewTimer(50 * time.Millisecond) // the pace of the tries
		select {
		case <-timer.C:
		case <-h1.Done():
			timer.Stop()
		}
	}
	testsupport.Done(t, h1, 30*time.Second, "the first hold ends") // a hang guard, not a time limit
	assert.ErrorIs(t, context.Cause(h1), lockmw.ErrLockLost, "the first holder's majority is gone")
	t.Logf("%d tries refused while the first holder held", tries)
	assert.Positive(t, tries)
	assert.ErrorIs(t, fl.Unlock(h1), lockmw.ErrLockLost)

	h2, err := ol.Lock(ctx)
	require.NoError(t, err)
	assert.False(t, firstOn(srvs[1]), "the restarted master got the first holder's field back")
	require.NoError(t, ol.Unlock(h2))
}
