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

// loggedClient is a lockmw.Client whose go-redis client logs the commands
// it sends (from after its first connection's set-up).
func loggedClient(t *testing.T, srv *redistest.Server, mod ...func(*redis.Options)) (*lockmw.Client, *cmdLog) {
	t.Helper()
	var log cmdLog
	rdb := srv.NewClient(mod...)
	rdb.AddHook(&log)
	require.NoError(t, rdb.Ping(context.Background()).Err())
	log.take()
	return locktest.New(t, rdb), &log
}

// A busy lock sends the acquisition to the script, which names the holder;
// the Client then remembers the contention and goes to the script first.
func TestContentionMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := locktest.NewOn(t, srv)
	h := locktest.MustLock(t, a.Mutex("busy"), ctx)
	b, log := loggedClient(t, srv)
	m := b.Mutex("busy")
	_, err := locktest.NewOn(t, srv).Mutex("busy").TryLock(ctx, 0, 0) // loads the acquire script
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	hw := locktest.MustLock(t, b.Mutex("warm-up"), ctx) // b's one RESTORE probe
	require.NoError(t, b.Mutex("warm-up").Unlock(hw))
	log.take()

	for i, want := range [][]string{{"restore", "script"}, {"script"}} {
		_, err := m.TryLock(ctx, 0, 0)
		var busy *lockmw.BusyError
		require.ErrorAs(t, err, &busy)
		assert.Regexp(t, "^"+a.ID()+":", busy.Holder, "attempt %d names the holder", i+1)
		assert.Equal(t, want, log.take(), "attempt %d", i+1)
	}
	require.NoError(t, a.Mutex("busy").Unlock(h))
}

// A lock taken with RESTORE is released like any other: a waiter queued
// meanwhile is handed the lock, not woken by Redisson's "0". The short
// release sees the waiter, changes nothing and leaves it to release.lua.
func TestRestoredLockHandsOver(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name = "fast-then-queued"
	a, log := loggedClient(t, srv)
	h := locktest.MustLock(t, a.Mutex(name), ctx)
	require.Equal(t, []string{"restore", "type", "del", "restore"}, log.take(), "the probe, then the lock")
	b := locktest.NewOn(t, srv).Mutex(name)
	got := make(chan context.Context, 1)
	go func() {
		hb, err := b.Lock(ctx)
		assert.NoError(t, err)
		got <- hb
	}()
	testsupport.Eventually(t, 5*time.Second, "waiter queued", func() bool {
		n, _ := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
		return n == 1
	})
	sub := srv.NewClient().Subscribe(ctx, "redisson_lock__channel:{"+name+"}")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, srv.Client().ScriptFlush(ctx).Err())
	log.take()

	require.NoError(t, a.Mutex(name).Unlock(h))
	assert.Equal(t, []string{"script", "script"}, log.take(),
		"the short release finds the waiter and changes nothing; release.lua hands over")
	var hb context.Context
	select {
	case hb = <-got:
	case <-ctx.Done():
		t.Fatal("the queued waiter never got the lock")
	}
	// Messages arrive in order: had the release published "0", it would
	// come first.
	require.NoError(t, srv.Client().Publish(ctx, "redisson_lock__channel:{"+name+"}", "sentinel").Err())
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "sentinel", msg.Payload, "handed over, not released to all")
	// Without the subscriber, which rlock takes for a Redisson waiter: the
	// releases below would reserve the lock for it.
	require.NoError(t, sub.Close())
	channel, rollCall := "redisson_lock__channel:{"+name+"}", "rlock_handoff:{"+name+"}"
	testsupport.Eventually(t, 5*time.Second, "the subscriber gone", func() bool {
		n, err := srv.Client().PubSubNumSub(ctx, channel, rollCall).Result()
		return err == nil && n[channel] == n[rollCall]
	})
	require.NoError(t, b.Unlock(hb))

	// The queued waiter was contention: a now takes and frees this name
	// with the scripts alone.
	log.take()
	h = locktest.MustLock(t, a.Mutex(name), ctx)
	require.NoError(t, a.Mutex(name).Unlock(h))
	assert.Equal(t, []string{"script", "script"}, log.take(),
		"the acquire script, then release.lua alone")
}

// A server that refuses RESTORE (here an ACL) leaves the Client on the
// scripts: every lock still works, and RESTORE is not tried again after the
// Client's one probe (RESTORE, TYPE and DEL of a key of its own).
func TestRestoreRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	require.NoError(t, srv.Client().Do(ctx, "ACL", "SETUSER", "norestore", "on", ">pw", "~*", "&*", "+@all", "-restore").Err())
	c, log := loggedClient(t, srv, func(o *redis.Options) { o.Username, o.Password = "norestore", "pw" })
	m := c.Mutex("refused")
	for i, want := range [][]string{{"restore", "type", "del", "script"}, {"script"}} {
		h, err := m.Lock(ctx)
		require.NoError(t, err, "lock %d", i+1)
		assert.Equal(t, want, log.take(), "lock %d", i+1)
		n, err := m.HoldCount(h)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		require.NoError(t, m.Unlock(h))
		log.take()
	}
}

// Redisson reads and releases a lock taken with RESTORE.
func TestRestoredLockIsRedissons(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	m := c.Mutex("restored")
	h := locktest.MustLock(t, m, ctx)
	in := locktest.MustLock(t, m, h) // HINCRBY on the restored count
	fields, err := srv.Client().HGetAll(ctx, "restored").Result()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	for f, v := range fields {
		assert.Regexp(t, "^"+c.ID()+`:\d+$`, f)
		assert.Equal(t, "2", v)
	}
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0), "the watchdog timeout is the TTL")
	require.NoError(t, m.Unlock(in))
	require.NoError(t, m.Unlock(h))
	n, err := srv.Client().Exists(ctx, "restored").Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}
