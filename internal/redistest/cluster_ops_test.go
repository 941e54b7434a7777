package redistest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

// One cluster goes through every kind of topology change in turn, checked
// against what the nodes themselves report (ROLE, CLUSTER SHARDS, keys).
func TestClusterTopologyChanges(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	ctx := testsupport.CtxFor(t, 40*time.Second)
	c := cl.Client()

	// Keys on every shard, replicated before any fail-over, so that even a
	// crash loses none.
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%d", i)
		require.NoError(t, c.Set(ctx, keys[i], i, 0).Err())
	}
	waitReplicated(t, ctx, cl, cl.Masters...)
	assertKeys := func(t *testing.T, c *redis.ClusterClient) {
		t.Helper()
		for i, k := range keys {
			got, err := c.Get(ctx, k).Int()
			require.NoError(t, err, k)
			require.Equal(t, i, got, k)
		}
	}

	t.Run("NodeID is CLUSTER MYID", func(t *testing.T) {
		for _, s := range cl.Nodes() {
			id, err := s.Client().Do(ctx, "CLUSTER", "MYID").Text()
			require.NoError(t, err)
			assert.Equal(t, id, cl.NodeID(s))
		}
		other := redistest.Start(t)
		assert.Empty(t, cl.NodeID(other))
	})

	t.Run("MasterFor names the owner of the key's slot", func(t *testing.T) {
		for _, k := range keys[:10] {
			m, err := cl.MasterFor(ctx, k)
			require.NoError(t, err)
			assert.Equal(t, cl.Masters[redistest.Slot(k)*3/16384], m, k)
			got, err := m.Client().Get(ctx, k).Result()
			require.NoError(t, err, "the owner serves %s without redirection", k)
			assert.Equal(t, strings.TrimPrefix(k, "key:"), got)
		}
	})

	t.Run("ReplicaOf names the replica", func(t *testing.T) {
		for i, m := range cl.Masters {
			r, err := cl.ReplicaOf(ctx, m)
			require.NoError(t, err)
			assert.Equal(t, cl.Replicas[i], r)
		}
		_, err := cl.ReplicaOf(ctx, cl.Replicas[0])
		require.ErrorContains(t, err, "no running replica")
	})

	t.Run("Failover refuses a bad mode and a master", func(t *testing.T) {
		require.ErrorContains(t, cl.Failover(ctx, cl.Replicas[0], "SOON"), `want "", "FORCE" or "TAKEOVER"`)
		require.ErrorContains(t, cl.Failover(ctx, cl.Masters[0], ""), "is not a replica")
		assertRole(t, ctx, cl.Masters[0], "master", 0)
	})

	// Shard i fails over in mode i.
	for i, mode := range []string{"", "FORCE", "takeover"} {
		t.Run(fmt.Sprintf("Failover %q promotes the replica", mode), func(t *testing.T) {
			old, r := cl.Masters[i], cl.Replicas[i]
			require.NoError(t, cl.Failover(ctx, r, mode))
			assertRole(t, ctx, r, "master", 0)
			assertRole(t, ctx, old, "slave", r.Port())
			assertSlotOwner(t, ctx, cl, i*16384/3, r)
			assertSlotOwner(t, ctx, cl, (i+1)*16384/3-1, r)
			back, err := cl.ReplicaOf(ctx, r)
			require.NoError(t, err)
			assert.Equal(t, old, back, "the old master replicates the new one")
			for _, k := range keys {
				if redistest.Slot(k)*3/16384 == i {
					m, err := cl.MasterFor(ctx, k)
					require.NoError(t, err)
					require.Equal(t, r, m, k)
				}
			}
			assertKeys(t, c)
		})
	}
	masters, err := cl.CurrentMasters(ctx)
	require.NoError(t, err)
	assert.Equal(t, cl.Replicas, masters, "CurrentMasters after the fail-overs")

	const tag = "{migrate}"
	slot := redistest.Slot(tag)
	src, err := cl.MasterFor(ctx, tag)
	require.NoError(t, err)
	dst := masters[(slices.Index(masters, src)+1)%len(masters)]

	t.Run("MigrateSlot moves the slot and its keys", func(t *testing.T) {
		require.ErrorContains(t, cl.MigrateSlot(ctx, 16384, dst), "out of range")
		require.ErrorContains(t, cl.MigrateSlot(ctx, slot, cl.Masters[0]), "is not a master")

		for i := range 250 { // more than one MIGRATE batch
			require.NoError(t, c.Set(ctx, fmt.Sprintf("%s:%d", tag, i), i, time.Hour).Err())
		}
		require.NoError(t, cl.MigrateSlot(ctx, slot, dst))
		assertSlotOwner(t, ctx, cl, slot, dst)
		assertSlotOwner(t, ctx, cl, slot+1, src) // only the one slot moved
		n, err := src.Client().Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", slot).Int()
		require.NoError(t, err)
		assert.Zero(t, n, "keys left on the old owner")
		n, err = dst.Client().Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", slot).Int()
		require.NoError(t, err)
		assert.Equal(t, 250, n, "keys on the new owner")
		ttl, err := dst.Client().TTL(ctx, tag+":7").Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 50*time.Minute, "MIGRATE keeps the TTL")

		err = src.Client().Get(ctx, tag+":7").Err()
		require.ErrorContains(t, err, "MOVED", "the old owner redirects")
		got, err := c.Get(ctx, tag+":7").Int()
		require.NoError(t, err, "the cluster client follows MOVED")
		assert.Equal(t, 7, got)
		m, err := cl.MasterFor(ctx, tag)
		require.NoError(t, err)
		assert.Equal(t, dst, m)

		require.NoError(t, cl.MigrateSlot(ctx, slot, dst), "to its owner: nothing to do")
		assertSlotOwner(t, ctx, cl, slot, dst)
	})

	t.Run("KillMaster crashes a master and waits for its replica", func(t *testing.T) {
		waitReplicated(t, ctx, cl, dst)
		r, err := cl.ReplicaOf(ctx, dst)
		require.NoError(t, err)
		pid := dst.Pid()
		promoted, err := cl.KillMaster(ctx, dst)
		require.NoError(t, err)
		assert.Equal(t, r, promoted)
		assert.False(t, dst.Running())
		assertGone(t, pid)
		assertRole(t, ctx, promoted, "master", 0)
		assertSlotOwner(t, ctx, cl, slot, promoted)
		for _, s := range cl.Nodes() {
			if s.Running() {
				info, err := s.Client().Do(ctx, "CLUSTER", "INFO").Text()
				require.NoError(t, err)
				assert.Contains(t, info, "cluster_state:ok", s.Addr())
			}
		}
		// A client that knew the dead node fails until it reloads the slot
		// map; a new one finds the promoted node at once.
		fresh := cl.NewClient()
		assertKeys(t, fresh)
		got, err := fresh.Get(ctx, tag+":7").Int()
		require.NoError(t, err)
		assert.Equal(t, 7, got)

		// The promoted node has no replica left: nothing is killed.
		_, err = cl.KillMaster(ctx, promoted)
		require.ErrorContains(t, err, "no running replica")
		assert.True(t, promoted.Running())
		rep, err := cl.ReplicaOf(ctx, src)
		require.NoError(t, err)
		_, err = cl.KillMaster(ctx, rep)
		require.ErrorContains(t, err, "is not a master")
		assert.True(t, rep.Running())
	})
}

// With two replicas, the cluster elects one of them; KillMaster returns
// whichever won.
func TestKillMasterSeveralReplicas(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 2)
	ctx := testsupport.CtxFor(t, 30*time.Second)
	victim := cl.Masters[0]
	promoted, err := cl.KillMaster(ctx, victim)
	require.NoError(t, err)
	require.Contains(t, cl.Replicas[:2], promoted)
	assert.False(t, victim.Running())
	assertRole(t, ctx, promoted, "master", 0)
	assertSlotOwner(t, ctx, cl, 0, promoted)
	assertSlotOwner(t, ctx, cl, 16384/3-1, promoted)
}

// waitReplicated waits until every write to the masters so far is on their
// replicas (Cluster.WaitReplicated: a WAIT on a connection that wrote
// nothing waits for nothing).
func waitReplicated(t *testing.T, ctx context.Context, cl *redistest.Cluster, masters ...*redistest.Server) {
	t.Helper()
	for _, m := range masters {
		require.NoError(t, cl.WaitReplicated(ctx, m))
	}
}

// assertRole checks ROLE on s; for a replica, masterPort is its master's.
func assertRole(t *testing.T, ctx context.Context, s *redistest.Server, want string, masterPort int) {
	t.Helper()
	role, err := s.Client().Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	require.Equal(t, want, role[0], "ROLE of %s: %v", s.Addr(), role)
	if want == "slave" {
		assert.Equal(t, int64(masterPort), role[2], "master of %s", s.Addr())
		assert.Equal(t, "connected", role[3], "link of %s", s.Addr())
	}
}

// assertSlotOwner checks that, in every running node's CLUSTER SLOTS, slot
// is served by owner as its master. (CLUSTER SHARDS is no ground for it:
// after a fail-over Redis 7.0 gives the failed master a shard of its own,
// while Redis 7.2 and 7.4 and Valkey 8 keep it in the shard of its former
// replica, and Redis 7.2 and 7.4 then list that shard with no slots.)
func assertSlotOwner(t *testing.T, ctx context.Context, cl *redistest.Cluster, slot int, owner *redistest.Server) {
	t.Helper()
	for _, s := range cl.Nodes() {
		if !s.Running() {
			continue
		}
		ranges, err := s.Client().ClusterSlots(ctx).Result()
		require.NoError(t, err)
		var masters []string
		for _, r := range ranges {
			if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
				masters = append(masters, r.Nodes[0].Addr)
			}
		}
		assert.Equal(t, []string{owner.Addr()}, masters, "the master of slot %d according to %s", slot, s.Addr())
	}
}
