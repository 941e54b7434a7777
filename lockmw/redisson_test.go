package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redissonPeer plays a Java service's RLock from Redisson's protocol (4.x):
// hash field "<uuid>:<threadId>", the one-branch acquire script, the unlock
// script with its latch that publishes "0" on redisson_lock__channel:{name}.
type redissonPeer struct {
	rdb  *redis.Client
	uuid string
}

func (p redissonPeer) field(thread int) string { return p.uuid + ":" + string(rune('0'+thread)) }

// tryAcquire returns (true, 0) when acquired, else (false, pttl).
func (p redissonPeer) tryAcquire(ctx context.Context, name string, thread int) (bool, time.Duration, error) {
	return redisson.TryAcquire(ctx, p.rdb, name, p.field(thread), 30*time.Second)
}

func (p redissonPeer) unlock(ctx context.Context, name string, thread int, requestID string) (int64, error) {
	return redisson.Unlock(ctx, p.rdb, name, p.field(thread), requestID)
}

func TestRedissonHoldsRlockWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	peer := redissonPeer{rdb: srv.NewClient(), uuid: "5a1ad1f0-0000-4000-8000-00000000java"}
	ok, _, err := peer.tryAcquire(ctx, "shared", 1)
	require.NoError(t, err)
	require.True(t, ok)

	c := locktest.NewOn(t, srv)
	m := c.Mutex("shared")
	_, err = m.TryLock(ctx, 0, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy, "a Redisson holder excludes rlock")
	assert.Equal(t, peer.field(1), busy.Holder)
	assert.Greater(t, busy.TTL, 20*time.Second)

	got := make(chan error, 1)
	var hold context.Context
	go func() {
		var err error
		hold, err = m.Lock(ctx)
		got <- err
	}()
	testsupport.Eventually(t, 5*time.Second, "rlock waiter subscribed", func() bool {
		n, _ := srv.Client().PubSubNumSub(ctx, "redisson_lock__channel:{shared}").Result()
		return n["redisson_lock__channel:{shared}"] == 1
	})
	// Redisson re-enters and unlocks twice; only the last unlock frees it.
	ok, _, err = peer.tryAcquire(ctx, "shared", 1)
	require.NoError(t, err)
	require.True(t, ok)
	r, err := peer.unlock(ctx, "shared", 1, "req-1")
	require.NoError(t, err)
	assert.Equal(t, int64(0), r)
	r, err = peer.unlock(ctx, "shared", 1, "req-1") // a re-sent unlock: the latch answers
	require.NoError(t, err)
	assert.Equal(t, int64(0), r)
	r, err = peer.unlock(ctx, "shared", 1, "req-2")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r)
	select {
	case err := <-got:
		require.NoError(t, err, "Redisson's unlock message wakes the rlock waiter")
	case <-time.After(5 * time.Second): // the Redisson TTL was 30s: woken, not expired
		t.Fatal("rlock waiter not woken by Redisson's unlock")
	}
	require.NoError(t, m.Unlock(hold))
}

func TestRlockHoldsRedissonWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	peer := redissonPeer{rdb: srv.NewClient(), uuid: "7b2be2e0-0000-4000-8000-00000000java"}
	c := locktest.NewOn(t, srv)
	m := c.Mutex("{orders}:42") // a name with a hash tag: Redisson's channel keeps it as is
	h := locktest.MustLock(t, m, ctx)
	inner := locktest.MustLock(t, m, h)

	count, err := srv.Client().HGetAll(ctx, "{orders}:42").Result()
	require.NoError(t, err)
	require.Len(t, count, 1)
	for _, v := range count {
		assert.Equal(t, "2", v, "the reentrancy count is a plain integer Redisson reads")
	}
	ok, pttl, err := peer.tryAcquire(ctx, "{orders}:42", 1)
	require.NoError(t, err)
	assert.False(t, ok, "an rlock holder excludes Redisson")
	assert.Greater(t, pttl, time.Duration(0))

	// A Redisson waiter is subscribed to its channel.
	sub := peer.rdb.Subscribe(ctx, "redisson_lock__channel:{orders}:42")
	defer sub.Close()
	_, err = sub.Receive(ctx) // the server's confirmation
	require.NoError(t, err)
	require.NoError(t, m.Unlock(inner))
	require.NoError(t, m.Unlock(h))
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0", msg.Payload, "rlock's unlock publishes Redisson's unlock message")
	ok, _, err = peer.tryAcquire(ctx, "{orders}:42", 1)
	require.NoError(t, err)
	assert.True(t, ok, "free for Redisson after rlock's unlock")

	// Redisson cannot unlock rlock's lock, and rlock not Redisson's.
	_, err = m.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.ErrorIs(t, m.Unlock(ctx), lockmw.ErrNotHeld)
}
