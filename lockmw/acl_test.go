package lockmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aclUser makes user on srv with redistest.MinimalACL (docs/security.md's
// rule; or, when rule is not "", rule) and patterns, and returns a go-redis
// client of that user with default options.
func aclUser(t *testing.T, srv *redistest.Server, user, rule string, patterns ...string) *redis.Client {
	t.Helper()
	if rule == "" {
		rule = redistest.MinimalACL
	}
	require.NoError(t, redistest.SetUser(context.Background(), user, "pw-"+user, rule, patterns, srv))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: "pw-" + user})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestACLMinimalUserWithNamespace: under exactly the documented rule,
// confined to its prefix, a namespaced Client runs every kind — waiting and
// the hand-off, renewal, fencing, the loss signal — and a second tenant,
// confined to its own prefix, shares no lock with it and may touch none of
// its keys or channels.
func TestACLMinimalUserWithNamespace(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srv := redistest.Start(t)
	app := aclUser(t, srv, "app", "", "~app:*", "&app:*")
	a1 := lockmw.New(app, lockmw.WithNamespace("app:"), lockmw.WithWatchdogTimeout(600*time.Millisecond))
	a2 := lockmw.New(app, lockmw.WithNamespace("app:"))
	defer a1.Close()
	defer a2.Close()

	m1, m2 := a1.Mutex("orders:42", lockmw.WithFencing()), a2.Mutex("orders:42", lockmw.WithFencing())
	h1, err := m1.Lock(ctx)
	require.NoError(t, err)
	assert.True(t, srv.Client().Exists(ctx, "app:{orders:42}").Val() == 1, "the lock's key is in the namespace")
	got := make(chan error, 1)
	go func() {
		h2, err := m2.Lock(ctx) // waits: queued, subscribed, handed the lock
		if err == nil {
			err = m2.Unlock(h2)
		}
		got <- err
	}()
	testsupport.Eventually(t, 10*time.Second, "the waiter is queued", func() bool {
		return srv.Client().ZCard(ctx, "app:rlock_queue:app:{orders:42}~").Val() == 1
	})
	// Renewed past its watchdog timeout (600 ms) while the other waits.
	testsupport.Eventually(t, 10*time.Second, "renewed", func() bool {
		d := srv.Client().PTTL(ctx, "app:{orders:42}").Val()
		return d > 450*time.Millisecond
	})
	require.NoError(t, m1.Unlock(h1))
	require.NoError(t, testsupport.Recv(t, got, 20*time.Second, "the waiter's Lock"))

	sem := a1.Semaphore("pool", 2)
	p1, err := sem.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, sem.Unlock(p1))
	rw := a1.RWMutex("doc")
	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.RUnlock(r))

	lost, err := m1.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, srv.Client().Del(ctx, "app:{orders:42}").Err()) // an operator's force unlock
	testsupport.Recv(t, lost.Done(), 10*time.Second, "the loss signal")
	assert.ErrorIs(t, context.Cause(lost), lockmw.ErrLockLost)

	for _, k := range srvKeys(t, srv) {
		assert.True(t, strings.HasPrefix(k, "app:"), "key %q outside the namespace", k)
	}

	// A second tenant: the same names, its own prefix; nothing shared.
	other := aclUser(t, srv, "other", "", "~other:*", "&other:*")
	o := lockmw.New(other, lockmw.WithNamespace("other:"))
	defer o.Close()
	held, err := a1.Mutex("orders:42").Lock(ctx)
	require.NoError(t, err)
	oh, err := o.Mutex("orders:42").TryLock(ctx, 0, 0)
	require.NoError(t, err, "another namespace's lock of the same name")
	require.NoError(t, o.Mutex("orders:42").Unlock(oh))
	for _, cmd := range [][]any{{"exists", "app:{orders:42}"}, {"del", "app:{orders:42}"}, {"hgetall", "app:rlock_waiters:app:{orders:42}~"}, {"publish", "app:redisson_lock__channel:app:{orders:42}", "0"}} {
		err := other.Do(ctx, cmd...).Err()
		assert.True(t, redis.HasErrorPrefix(err, "NOPERM"), "%v by the other tenant: %v", cmd, err)
	}
	require.NoError(t, a1.Mutex("orders:42").Unlock(held))
}

// srvKeys lists every key of srv.
func srvKeys(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	keys, err := srv.Client().Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return keys
}

// TestACLRefusalIsErrNoPermission: where the user may not touch a lock's
// keys (no namespace) or channels (a key pattern only), Lock and TryLock
// return ErrNoPermission naming what the lock needs, at once: not retried,
// not a wait to its deadline.
func TestACLRefusalIsErrNoPermission(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srv := redistest.Start(t)

	t.Run("keys outside the user's patterns", func(t *testing.T) {
		c := lockmw.New(aclUser(t, srv, "keys", "", "~app:*", "&app:*"))
		defer c.Close()
		_, err := c.Mutex("app:orders:42").TryLock(ctx, 0, 0)
		require.ErrorIs(t, err, lockmw.ErrNoPermission)
		assert.Contains(t, err.Error(), "rlock_queue:{app:orders:42}", "it names the keys the lock needs")
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err = c.Mutex("app:orders:42").Lock(wctx)
		require.ErrorIs(t, err, lockmw.ErrNoPermission)
		assert.NoError(t, wctx.Err(), "refused at once, not at the deadline")
	})

	t.Run("channels outside the user's patterns", func(t *testing.T) {
		rdb := aclUser(t, srv, "nochan", "", "~app:*", "resetchannels")
		holder := lockmw.New(srv.NewClient(), lockmw.WithNamespace("app:"))
		defer holder.Close()
		h, err := holder.Mutex("orders:7").Lock(ctx)
		require.NoError(t, err)
		defer func() { _ = holder.Mutex("orders:7").Unlock(h) }()
		c := lockmw.New(rdb, lockmw.WithNamespace("app:"))
		defer c.Close()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err = c.Mutex("orders:7").Lock(wctx) // busy: it must subscribe, and may not
		require.ErrorIs(t, err, lockmw.ErrNoPermission)
		assert.False(t, errors.Is(err, context.DeadlineExceeded), "refused, not timed out: %v", err)
		assert.NoError(t, wctx.Err(), "refused at once, not at the deadline")
	})
}

// TestACLWithoutNamespace: docs/security.md's patterns for the names that
// start with a prefix, without a namespace, let every kind wait and be
// handed over (a name with a brace of its own too), and refuse a name
// outside the prefix.
func TestACLWithoutNamespace(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srv := redistest.Start(t)
	var patterns []string
	for _, p := range []string{"", "{", "rlock_queue:{", "rlock_waiters:{", "redisson_lock_token:{", "redisson_unlock_latch:{",
		"redisson_lock__channel:{", "redisson_sc:{", "redisson_rwlock:{", "rlock_handoff:{"} {
		patterns = append(patterns, "~"+p+"orders:*")
	}
	for _, p := range []string{"redisson_lock__channel:{", "redisson_sc:{", "redisson_rwlock:{", "rlock_handoff:{"} {
		patterns = append(patterns, "&"+p+"orders:*")
	}
	rdb := aclUser(t, srv, "orders", "", patterns...)
	c1, c2 := lockmw.New(rdb), lockmw.New(rdb)
	defer c1.Close()
	defer c2.Close()
	rw1, rw2 := c1.RWMutex("orders:doc"), c2.RWMutex("orders:doc")
	for _, pair := range [][2]lockmw.Locker{
		{c1.Mutex("orders:1", lockmw.WithFencing()), c2.Mutex("orders:1", lockmw.WithFencing())},
		{c1.Mutex("{orders:t}:x"), c2.Mutex("{orders:t}:x")},
		{c1.Semaphore("orders:pool", 1), c2.Semaphore("orders:pool", 1)},
		{rw1.RLocker(), rw2},
	} {
		h, err := pair[0].Lock(ctx)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() { // waits: queued, subscribed, handed the lock
			h2, err := pair[1].Lock(ctx)
			if err == nil {
				err = pair[1].Unlock(h2)
			}
			got <- err
		}()
		testsupport.Eventually(t, 10*time.Second, "the waiter is queued", func() bool {
			n, _ := srv.Client().Keys(ctx, "rlock_queue:*").Result()
			return len(n) == 1
		})
		require.NoError(t, pair[0].Unlock(h))
		require.NoError(t, testsupport.Recv(t, got, 20*time.Second, "the waiter's Lock"))
	}
	_, err := c1.Mutex("other:1").TryLock(ctx, 0, 0)
	require.ErrorIs(t, err, lockmw.ErrNoPermission)
}

// TestNamespaceOnCluster: a namespaced lock's keys share one hash slot on a
// cluster, for every kind, and start with the namespace.
func TestNamespaceOnCluster(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	cl := redistest.StartCluster(t, 3, 0)
	c := lockmw.New(cl.NewClient(), lockmw.WithNamespace("svc:"))
	defer c.Close()
	for _, l := range []lockmw.Locker{c.Mutex("a"), c.Mutex("{tenant}:b"), c.Semaphore("c", 2), c.RWMutex("d"), c.RWMutex("d").RLocker()} {
		h, err := l.TryLock(ctx, time.Second, 0)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(h))
	}
	var outside []string
	for _, node := range cl.Masters {
		keys, err := node.Client().Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			if !strings.HasPrefix(k, "svc:") {
				outside = append(outside, k)
			}
		}
	}
	assert.Empty(t, outside, "keys outside the namespace")
}

// TestACLReplicaSync: WithReplicaSync runs under the documented rule, in a
// namespace: the touch and WAIT are allowed, and a paused replica still
// gives ErrNotReplicated, not a permission error.
func TestACLReplicaSync(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	master, replica := startReplicated(t)
	c := lockmw.New(aclUser(t, master, "app", "", "~app:*", "&app:*"), lockmw.WithNamespace("app:"), lockmw.WithReplicaSync(1, 2*time.Second))
	defer c.Close()
	for _, l := range []lockmw.Locker{c.Mutex("orders:1"), c.Semaphore("pool", 2), c.RWMutex("doc")} {
		h, err := l.TryLock(ctx, 5*time.Second, 0)
		require.NoError(t, err, "%s under the ACL user", l.Name())
		require.NoError(t, l.Unlock(h))
	}
	require.NoError(t, replica.Pause())
	defer func() { _ = replica.Resume() }()
	_, err := c.Mutex("orders:1").Lock(ctx)
	assert.ErrorIs(t, err, lockmw.ErrNotReplicated)
	assert.NotErrorIs(t, err, lockmw.ErrNoPermission)
}

// TestNamespaceOnQuorum: a quorum Client's keys, on every master, start
// with its namespace.
func TestNamespaceOnQuorum(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	var srvs []*redistest.Server
	var rdbs []redis.UniversalClient
	for range 3 {
		srv := redistest.Start(t)
		srvs = append(srvs, srv)
		rdbs = append(rdbs, srv.NewClient())
	}
	c := lockmw.NewQuorum(rdbs, lockmw.WithNamespace("q:"))
	defer c.Close()
	m := c.Mutex("orders:9", lockmw.WithFencing())
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	for i, srv := range srvs {
		assert.Equal(t, int64(1), srv.Client().Exists(ctx, "q:{orders:9}").Val(), "master %d holds the namespaced key", i)
	}
	require.NoError(t, m.Unlock(h))
	for i, srv := range srvs {
		for _, k := range srvKeys(t, srv) {
			assert.True(t, strings.HasPrefix(k, "q:"), "master %d: key %q outside the namespace", i, k)
		}
	}
}
