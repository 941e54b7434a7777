package redisson

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With WithNodeWake each waiting thread has a subscription of its own, tries
// twice before it subscribes, and every one of them wakes and tries on a
// single "0" (Redisson wakes one thread per "0"); the thread that lost
// subscribes again, and the next "0" gives it the lock.
func TestNodeWake(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	holder := newProcess(t, srv)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	log := &commandLog{}
	rdb.AddHook(log)
	waiter := NewClient(rdb, WithNodeWake())
	t.Cleanup(func() { _ = waiter.Close() })
	subscribers := func() int64 {
		n, err := srv.Client().PubSubNumSub(ctx, Channel("node")).Result()
		require.NoError(t, err)
		return n[Channel("node")]
	}

	lh := holder.GetLock("node")
	require.NoError(t, lh.Lock(ctx, 1, 0))
	got := make(chan any, 2)
	for id := int64(1); id <= 2; id++ {
		go func() { got <- <-lockAsync(ctx, waiter.GetLock("node"), id) }()
	}
	testsupport.Eventually(t, 5*time.Second, "both threads tried twice and subscribed, each on its own", func() bool {
		return subscribers() == 2 && len(log.take(false)) == 4
	})
	log.take(true)
	require.NoError(t, lh.Unlock(ctx, 1))
	first := testsupport.Recv(t, got, notByTTL, "a woken thread got the lock")
	testsupport.Eventually(t, 5*time.Second, "the other thread woke on the same \"0\", tried and subscribed again", func() bool {
		return len(log.take(false)) == 2 && subscribers() == 1
	})
	require.NoError(t, waiter.GetLock("node").Unlock(ctx, first.(int64)))
	second := testsupport.Recv(t, got, notByTTL, "the other thread got the lock on the next \"0\"")
	assert.NotEqual(t, first, second)
	require.NoError(t, waiter.GetLock("node").Unlock(ctx, second.(int64)))
	testsupport.Eventually(t, 5*time.Second, "no thread is subscribed once both held it", func() bool { return subscribers() == 0 })
}

// A waiter with WithNodeWake woken by nothing tries again when the TTL its
// last attempt saw has passed.
func TestNodeWakeByTheTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	holder := newProcess(t, srv)
	require.NoError(t, holder.GetLock("node-ttl").Lock(ctx, 1, 300*time.Millisecond))
	waiter := NewClient(srv.NewClient(), WithNodeWake())
	t.Cleanup(func() { _ = waiter.Close() })
	assert.Equal(t, int64(7), testsupport.Recv(t, lockAsync(ctx, waiter.GetLock("node-ttl"), 7), notByTTL, "the waiter got the lock"))
}

func TestNodeWakeRefusesShardedPubSub(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "redisson: NewShardedClient: WithNodeWake: node-redisson has no sharded pub/sub",
		func() { NewShardedClient(nil, WithNodeWake()) })
}
