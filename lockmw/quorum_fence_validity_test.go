package lockmw_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fenced quorum acquisition whose fence round finds a counter above the
// token it saw on one master (another hold's fence came first there) and
// waits for a master that does not answer (black-holed, or paused) must not
// return a hold past its validity time: the hold's keys got their TTL at the
// acquisition, and nothing renews them until Lock returns. Found by the
// crash suite's quorum scenario with drawn faults (issue 45): a Lock
// returned a hold, already lost, whose token was below that of a hold that
// had started before it.
func TestQuorumFenceRoundPastValidity(t *testing.T) {
	t.Parallel()
	const (
		name     = "fence-late"
		watchdog = time.Second
	)
	ctx := testsupport.CtxFor(t, 30*time.Second)
	var srvs [3]*redistest.Server
	var proxies [3]*faultproxy.Proxy
	var rdbs []redis.UniversalClient
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		p, err := faultproxy.Start(srvs[i].Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		proxies[i] = p
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr()}) // go-redis's defaults: a read waits 3 s
		t.Cleanup(func() { _ = rdb.Close() })
		rdbs = append(rdbs, rdb)
	}
	keys := layout.Mutex(name)
	// On master 1, another hold's fence raises the counter between this
	// acquisition's win and its fence round.
	// On a fresh server the acquisition's EVALSHA finds NOSCRIPT and its
	// EVAL runs it: the counter is raised as that reply passes.
	var raised atomic.Bool
	var seen atomic.Int32
	direct := srvs[1].Client()
	proxies[1].SetRule(func(c faultproxy.Command) faultproxy.Action {
		if (c.Name == "evalsha" || c.Name == "eval") && len(c.Args) > 2 && c.Args[2] == keys.Lock && seen.Add(1) == 2 && raised.CompareAndSwap(false, true) {
			require.NoError(t, direct.Set(context.Background(), keys.Token, "9000000000000000", 0).Err())
		}
		return faultproxy.Forward
	})
	proxies[2].SetBlackhole(true) // master 2 runs what it gets, and answers nothing

	c := lockmw.NewQuorum(rdbs, lockmw.WithWatchdogTimeout(watchdog))
	defer c.Close()
	m := c.Mutex(name, lockmw.WithFencing())
	start := time.Now()
	hctx, err := m.Lock(ctx)
	took := time.Since(start)
	require.True(t, raised.Load(), "the acquisition reached master 1")
	require.NoError(t, err, "a wait tries again after an attempt too slow")
	tok, _ := m.Token(hctx)
	held := 0
	for _, i := range []int{0, 1} {
		n, err := srvs[i].Client().Exists(ctx, keys.Lock).Result()
		require.NoError(t, err)
		held += int(n)
	}
	t.Logf("Lock returned after %v (TTL %v), token %d, the lock's key on %d of the 2 masters that answer, hold context: %v",
		took.Round(time.Millisecond), watchdog, tok, held, context.Cause(hctx))
	assert.Equal(t, 2, held, "Lock returned a hold whose keys had expired")
	assert.NoError(t, context.Cause(hctx), "Lock returned a hold already lost")
	proxies[2].SetBlackhole(false)
	_ = m.Unlock(hctx)
}
