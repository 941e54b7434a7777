package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A quorum waiter that joins hubs whose subscription of the name another
// waiter had made, confirmed after this waiter's first attempt was sent, is
// ready at once: the subscriptions are in place, and no confirmation of them
// will come. Before, it counted none of them and waited for a ready that
// never closed, trying nothing until its wait ended (a quorum semaphore's
// waiter on a free permit for 15 s, asynqmw's TestServerLimitOnAQuorum).
func TestQuorumJoinOfHubsConfirmedAfterTheAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		rdbs[i] = redistest.Start(t).NewClient()
	}
	c := NewQuorum(rdbs)
	t.Cleanup(func() { _ = c.Close() })
	m := c.Mutex("q-join-confirmed")
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	defer func() { _ = m.Unlock(h) }()

	sent := time.Now() // the second waiter's first attempt
	first := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _, err := m.TryLock(wctx, Forever, 0); first <- err }()
	require.Eventually(t, func() bool { // the first waiter's subscriptions, confirmed after sent
		for _, hb := range c.hubs {
			hb.mu.Lock()
			ns := hb.names[m.k.channel]
			in := ns != nil && ns.confirmed && ns.confirmedAt.After(sent)
			hb.mu.Unlock()
			if !in {
				return false
			}
		}
		return true
	}, 30*time.Second, time.Millisecond)

	wt := &waitTurn{c: c, q: m.e, name: m.name, k: &m.k, a: attempt{field: c.id + ":second", ttl: time.Second}}
	ready, confirmed, err := wt.joinQuorum(ctx, sent)
	require.NoError(t, err)
	defer wt.qj.leave(wt.w)
	require.False(t, confirmed, "not in place before the attempt was sent")
	require.Len(t, ready, 1)
	select {
	case <-ready[0]:
	case <-time.After(10 * time.Second):
		t.Fatal("the join never became ready: the hubs' subscriptions, in place, were not counted")
	}
	stop()
	<-first
}
