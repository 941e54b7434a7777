package redistest_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

// The group of the issue: one master, one replica, three sentinels; the
// master crashes, a sentinel-elected replica takes over, and a failover
// client follows it.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	sg := redistest.StartSentinel(t, 1, 3)
	ctx := testsupport.CtxFor(t, 30*time.Second)
	require.Len(t, sg.Replicas, 1)
	require.Len(t, sg.Sentinels, 3)
	assert.Equal(t, redistest.SentinelMasterName, sg.MasterName)

	t.Run("the group is formed", func(t *testing.T) {
		assertRole(t, ctx, sg.Master, "master", 0)
		assertRole(t, ctx, sg.Replicas[0], "slave", sg.Master.Port())
		for _, n := range sg.Sentinels {
			role, err := n.Client().Do(ctx, "ROLE").Slice()
			require.NoError(t, err)
			assert.Equal(t, "sentinel", role[0])
			sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr()})
			m, err := sc.Master(ctx, sg.MasterName).Result()
			require.NoError(t, sc.Close())
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(sg.Master.Port()), m["port"])
			assert.Equal(t, "2", m["quorum"])
			assert.Equal(t, "2", m["num-other-sentinels"])
			assert.Equal(t, "1", m["num-slaves"])
			assert.Equal(t, "500", m["down-after-milliseconds"])
			assert.Equal(t, "3000", m["failover-timeout"])
		}
		assert.Len(t, sg.SentinelAddrs(), 3)
		m, err := sg.CurrentMaster(ctx)
		require.NoError(t, err)
		assert.Equal(t, sg.Master, m)
	})

	c := sg.Client(func(o *redis.FailoverOptions) { o.ClientName = "redistest" })
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	name, err := c.ClientGetName(ctx).Result()
	require.NoError(t, err)
	assert.Equal(t, "redistest", name, "mod applied")
	n, err := c.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "k replicated")

	pid := sg.Master.Pid()
	old, err := sg.KillMaster(ctx)
	require.NoError(t, err)
	assert.Equal(t, sg.Master, old)
	assert.False(t, old.Running())
	assertGone(t, pid)

	nm, err := sg.WaitFailover(ctx, old)
	require.NoError(t, err)
	assert.Equal(t, sg.Replicas[0], nm)
	assertRole(t, ctx, nm, "master", 0)
	cur, err := sg.CurrentMaster(ctx)
	require.NoError(t, err)
	assert.Equal(t, nm, cur)

	// The failover client finds the new master (after a few failed commands
	// while it reconnects) and the replicated key is there.
	var got string
	for {
		if got, err = c.Get(ctx, "k").Result(); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by ctx
	}
	require.NoError(t, err)
	assert.Equal(t, "v", got)
	require.NoError(t, c.Set(ctx, "k2", "v2", 0).Err(), "writes go to the new master")
	got, err = nm.Client().Get(ctx, "k2").Result()
	require.NoError(t, err)
	assert.Equal(t, "v2", got)
}

func TestSentinelClose(t *testing.T) {
	t.Parallel()
	sg, err := redistest.LaunchSentinel(0, 1)
	require.NoError(t, err)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	require.Empty(t, sg.Replicas)
	m, err := sg.CurrentMaster(ctx)
	require.NoError(t, err)
	assert.Equal(t, sg.Master, m)

	// The sentinel rewrote its configuration file (its ID, its state).
	sn := sg.Sentinels[0]
	conf, err := os.ReadFile(filepath.Join(sn.Dir(), "redis.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(conf), "sentinel myid ")

	c := sg.Client()
	require.NoError(t, c.Ping(ctx).Err())
	pids := []int{sg.Master.Pid(), sn.Pid()}
	dirs := []string{sg.Master.Dir(), sn.Dir()}
	require.NoError(t, sg.Close())
	for _, pid := range pids {
		assertGone(t, pid)
	}
	for _, d := range dirs {
		_, err := os.Stat(d)
		assert.True(t, os.IsNotExist(err), "%s removed: %v", d, err)
	}
	require.ErrorIs(t, c.Ping(context.Background()).Err(), redis.ErrClosed, "Close closes the clients")
	require.NoError(t, sg.Close(), "Close is idempotent")
	require.ErrorIs(t, sg.Client().Ping(context.Background()).Err(), redis.ErrClosed, "Client after Close")
}

func TestLaunchSentinelBadSize(t *testing.T) {
	t.Parallel()
	_, err := redistest.LaunchSentinel(-1, 3)
	require.ErrorContains(t, err, "sentinel group of -1 replicas and 3 sentinels")
	_, err = redistest.LaunchSentinel(1, 0)
	require.ErrorContains(t, err, "sentinel group of 1 replicas and 0 sentinels")
}
