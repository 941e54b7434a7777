package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fencing counter expires a day after its last token by default.
func TestFencingCounterHasADayTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("day-counter", WithFencing())
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Unlock(h))
	ttl, err := srv.Client().PTTL(ctx, "redisson_lock_token:{day-counter}").Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, fenceCounterTTL)
	assert.Greater(t, ttl, fenceCounterTTL-time.Minute)
}

// With a counter TTL of 200ms (the test hook), tokens stay strictly
// increasing across the counter's expiry: on a fresh acquisition, through a
// hand-off, and from a counter Redisson started at 1.
func TestFencingTokensIncreaseAcrossCounterExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	c := New(srv.NewClient())
	defer c.Close()
	c.tokenTTLArg = int64(200)
	const key = "redisson_lock_token:{short-counter}"
	m := c.Mutex("short-counter", WithFencing())
	lockToken := func(m *Mutex) (context.Context, int64) {
		h, err := m.Lock(ctx)
		if !assert.NoError(t, err) {
			return ctx, 0
		}
		tok, ok := m.Token(h)
		assert.True(t, ok, "a token")
		return h, tok
	}
	expired := func() bool { return rdb.Exists(ctx, key).Val() == 0 }

	// A counter Redisson started (no TTL) goes on, and gets the TTL.
	require.NoError(t, rdb.Set(ctx, key, 41, 0).Err())
	h, t1 := lockToken(m)
	require.NoError(t, m.Unlock(h))
	assert.Equal(t, int64(42), t1, "Redisson's counter goes on")
	ttl, err := rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, 200*time.Millisecond)

	// Expired: the next counter starts from the server's clock.
	testsupport.Eventually(t, 10*time.Second, "the counter expires", expired)
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	h, t2 := lockToken(m)
	assert.Greater(t, t2, t1)
	assert.Greater(t, t2, now.UnixMicro(), "started from the clock in µs")

	// Through a hand-off, with the counter expired while the lock was held.
	other := New(srv.NewClient())
	defer other.Close()
	om := other.Mutex("short-counter", WithFencing())
	type held struct {
		h   context.Context
		tok int64
	}
	got := make(chan held, 1)
	go func() {
		oh, tok := lockToken(om)
		got <- held{oh, tok}
	}()
	testsupport.Eventually(t, 10*time.Second, "the waiter is queued", func() bool { return rdb.ZCard(ctx, "rlock_queue:{short-counter}").Val() == 1 })
	testsupport.Eventually(t, 10*time.Second, "the counter expires while held", expired)
	require.NoError(t, m.Unlock(h))
	w := <-got
	assert.Greater(t, w.tok, t2, "a hand-off's token is above the last one")
	assert.NoError(t, om.Unlock(w.h))
}
