package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// go-redis re-sends a command whose reply timed out; these tests send the
// very same script request twice, as such a re-send does.

func TestResentAcquireCountsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("resent-acquire", WithFencing())
	field := c.id + ":1000"
	r1, err := m.try(ctx, attempt{field: field, fieldArg: field, ttl: time.Minute})
	require.NoError(t, err)
	require.True(t, r1.won)
	r2, err := m.try(ctx, attempt{field: field, fieldArg: field, ttl: time.Minute})
	require.NoError(t, err)
	require.True(t, r2.won, "the re-send finds its own win")
	assert.Equal(t, r1.token, r2.token, "no second token")
	n, err := srv.Client().HGet(ctx, "resent-acquire", field).Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "counted once")
}

func TestResentReleaseDecrementsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("resent-release")
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	in1, err := m.Lock(h)
	require.NoError(t, err)
	_, err = m.Lock(in1)
	require.NoError(t, err)
	field := m.findLevel(h).h.field
	keys := m.fullKeys("req-42")
	for range 2 {
		n, err := redis.NewScript(scripts.Release.Source()).Run(ctx, c.Redis(), keys, field, "publish", c.latchMS, 0).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(0), n)
	}
	count, err := srv.Client().HGet(ctx, "resent-release", field).Int()
	require.NoError(t, err)
	assert.Equal(t, 2, count, "a re-sent unlock decrements once")
	ttl, err := srv.Client().PTTL(ctx, m.k.latchBase+"req-42").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0), "the latch is short-lived")

	// The same for a re-entry.
	rkeys := []string{m.k.lock, m.k.latchBase + "req-43"}
	for range 2 {
		n, err := redis.NewScript(scripts.Reenter.Source()).Run(ctx, c.Redis(), rkeys, field, c.latchMS).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(3), n)
	}
	count, err = srv.Client().HGet(ctx, "resent-release", field).Int()
	require.NoError(t, err)
	assert.Equal(t, 3, count, "a re-sent re-entry counts once")
}

// The short release of an uncontended lock sets the same latch as
// release.lua: its re-send changes nothing (the field is gone) and hands over
// to release.lua, which finds the latch and answers "released".
func TestResentFastReleaseIsFound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("resent-fast-release")
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	lvl := m.findLevel(h)
	lvl.reqID, lvl.latch = "req-44", m.k.latchBase+"req-44"
	lvl.latchArg = argOf(&lvl.latch)
	done, err := m.fastRelease(ctx, lvl.h, lvl)
	require.NoError(t, err)
	require.True(t, done, "uncontended: the short script frees it")
	n, err := srv.Client().Exists(ctx, "resent-fast-release").Result()
	require.NoError(t, err)
	require.Zero(t, n, "freed")

	done, err = m.fastRelease(ctx, lvl.h, lvl)
	require.NoError(t, err)
	assert.False(t, done, "a re-send of the short script changes nothing")
	r, err := m.c.store.release(ctx, m, releaseReq{h: lvl.h, lvl: lvl, last: true})
	require.NoError(t, err)
	assert.Equal(t, int64(1), r, "release.lua finds the latch: released, not lost")

	other := &level{h: lvl.h, reqID: "req-45", latchArg: m.k.latchBase + "req-45"}
	r, err = m.c.store.release(ctx, m, releaseReq{h: lvl.h, lvl: other, last: true})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), r, "without that latch the field is just gone")
	lvl.h.end(endReleased, nil)
}

func TestLatchTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Long enough for every re-send: (retries+1) × read timeout + retries × back-off.
	rdb := srv.NewClient(func(o *redis.Options) {
		o.ReadTimeout, o.MaxRetries, o.MaxRetryBackoff = time.Second, 2, 100*time.Millisecond
	})
	assert.Equal(t, 3*time.Second+200*time.Millisecond, latchTTL(goredis.New(rdb).Info()))
	rdb = srv.NewClient(func(o *redis.Options) { o.MaxRetries = -1 }) // retries off
	assert.Equal(t, rdb.Options().ReadTimeout, latchTTL(goredis.New(rdb).Info()))
}

// A waiter that died after joining the queue is handed the lock with only a
// claim window (a tenth of its TTL): the name is free again after that, not
// after the dead waiter's whole TTL.
func TestDeadWaiterBlocksOnlyItsClaimWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	a, b := New(srv.NewClient()), New(srv.NewClient())
	defer a.Close()
	defer b.Close()
	h, err := a.Mutex("dead-waiter").Lock(ctx)
	require.NoError(t, err)
	// The "dead" waiter: queued with a 30s TTL, then never heard of again.
	dead := b.Mutex("dead-waiter")
	r, err := dead.try(ctx, attempt{field: b.id + ":999", fieldArg: b.id + ":999", ttl: 30 * time.Second, enqueue: true})
	require.NoError(t, err)
	require.False(t, r.won)
	require.NoError(t, a.Mutex("dead-waiter").Unlock(h))
	ttl, err := srv.Client().PTTL(ctx, "dead-waiter").Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, 3*time.Second, "handed over with a claim window of a tenth of 30s")
	assert.Greater(t, ttl, time.Duration(0))
	start := time.Now()
	hb, err := b.Mutex("dead-waiter").TryLock(ctx, 10*time.Second, 0)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "free after the claim window, not the dead waiter's TTL")
	require.NoError(t, b.Mutex("dead-waiter").Unlock(hb))
}
