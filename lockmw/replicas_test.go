package lockmw_test

import (
	"strings"
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

// startReplicated starts a master and a replica of it, in sync.
func startReplicated(t *testing.T) (master, replica *redistest.Server) {
	t.Helper()
	master = redistest.Start(t)
	replica = redistest.Start(t, "replicaof "+strings.Replace(master.Addr(), ":", " ", 1))
	ctx := testsupport.Ctx(t)
	testsupport.Eventually(t, 10*time.Second, "replica in sync", func() bool {
		info, err := master.Client().Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	})
	return master, replica
}

func TestReplicaSync(t *testing.T) {
	t.Parallel()
	master, replica := startReplicated(t)
	ctx := testsupport.Ctx(t)
	sync := lockmw.WithReplicaSync(1, 2*time.Second)
	a := locktest.NewOn(t, master, sync)
	b := locktest.NewOn(t, master, sync)
	m := a.Mutex("replicated")

	h := locktest.MustLock(t, m, ctx)
	n, err := replica.Client().Exists(ctx, "replicated").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "on the replica when Lock returns")

	// A waiter handed the lock also waits for the replica.
	got := make(chan error, 1)
	go func() {
		hb, err := b.Mutex("replicated").Lock(ctx)
		if err == nil {
			err = b.Mutex("replicated").Unlock(hb)
		}
		got <- err
	}()
	testsupport.Eventually(t, 5*time.Second, "waiter queued", func() bool {
		q, _ := master.Client().ZCard(ctx, "rlock_queue:{replicated}").Result()
		return q == 1
	})
	require.NoError(t, m.Unlock(h))
	require.NoError(t, <-got)

	// No replica acknowledges: the acquisition fails and nothing stays held.
	require.NoError(t, replica.Pause())
	defer func() { _ = replica.Resume() }()
	_, err = m.Lock(ctx)
	assert.ErrorIs(t, err, lockmw.ErrNotReplicated)
	assert.Contains(t, err.Error(), "0 of 1 replicas")
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "released after the failed sync")
	require.NoError(t, replica.Resume())
}

// WithReplicaSync covers every kind: a semaphore's permit waits for the
// replicas as a mutex's hold does, and is given back when they do not
// acknowledge it (before the engine, a semaphore skipped the sync: a
// Client with no replica refused a mutex and granted a permit).
func TestReplicaSyncCoversSemaphores(t *testing.T) {
	t.Parallel()
	master, replica := startReplicated(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, master, lockmw.WithReplicaSync(1, 2*time.Second))
	s := c.Semaphore("replicated-sem", 2)

	h, err := s.Lock(ctx)
	require.NoError(t, err)
	n, err := replica.Client().ZCard(ctx, "{replicated-sem}:timeout").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the permit is on the replica when Lock returns")
	require.NoError(t, s.Unlock(h))

	// No replica acknowledges: no permit, and none stays taken.
	require.NoError(t, replica.Pause())
	defer func() { _ = replica.Resume() }()
	_, err = s.Lock(ctx)
	assert.ErrorIs(t, err, lockmw.ErrNotReplicated)
	free, err := s.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, free, "the permit was given back after the failed sync")
	require.NoError(t, replica.Resume())
}

func TestReplicaSyncPanics(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	assert.Panics(t, func() { lockmw.New(rdb, lockmw.WithReplicaSync(0, time.Second)) })
	assert.Panics(t, func() { lockmw.New(rdb, lockmw.WithReplicaSync(1, 0)) })
}
