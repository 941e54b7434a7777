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

// A quorum of masters reached with go-redis clients of default options (5 s
// read timeout), as users build them: a paused master answers nothing, and
// the majority still locks, renews and unlocks, each operation waiting one
// read timeout for the paused master (the quorum waits for every master's
// answer). The watchdog timeout must exceed about three read timeouts for a
// hold to outlive that wait (see NewQuorum): 20 s here, renewals every 6.7 s.
func TestQuorumDefaultOptionsPausedMaster(t *testing.T) {
	t.Parallel()
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient()
	}
	ctx := testsupport.Ctx(t)
	renewed := make(chan struct{}, 100)
	hooks := lockmw.Hooks{Renewal: func(e lockmw.RenewalEvent) {
		for _, l := range e.Locks {
			if l.Outcome == lockmw.Renewed {
				select {
				case renewed <- struct{}{}:
				default:
				}
			}
		}
	}}
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(20*time.Second), lockmw.WithHooks(hooks))
	m := c.Mutex("q-default")

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	start := time.Now()
	h := locktest.MustLock(t, m, ctx)
	t.Logf("locked on 2 of 3 masters in %v", time.Since(start))
	for i := range 2 {
		assert.True(t, keyOn(t, srvs[i], "q-default"), "held on master %d", i)
	}
	testsupport.Recv(t, renewed, 30*time.Second, "a renewal on the majority")
	require.NoError(t, h.Err(), "the hold lives on 2 of 3 masters: %v", context.Cause(h))
	require.NoError(t, m.Unlock(h))
	for i := range 2 {
		assert.False(t, keyOn(t, srvs[i], "q-default"), "released on master %d", i)
	}
}
