package lockmw_test

import (
	"context"
	"errors"
	"fmt"
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

// lockAsync starts m.Lock(ctx) in a goroutine and returns where its outcome arrives.
func lockAsync(ctx context.Context, m *lockmw.Mutex) <-chan error {
	got := make(chan error, 1)
	go func() {
		h, err := m.Lock(ctx)
		if err == nil {
			err = m.Unlock(h)
		}
		got <- err
	}()
	return got
}

// waiting polls until a waiter for name is queued and subscribed to the
// name's channel on srv (a shard channel on a cluster node): it then has
// the reply of its first attempt and waits in the loop that retries Redis
// errors. Queued alone is not enough before a fault: the reply that queued
// it may still be on its way, and a first attempt that fails returns.
func waiting(t *testing.T, ctx context.Context, srv redis.UniversalClient, name string, sharded bool) {
	t.Helper()
	ch := "redisson_lock__channel:{" + name + "}"
	testsupport.Eventually(t, 5*time.Second, "waiter queued and subscribed", func() bool {
		if n, _ := srv.ZCard(ctx, "rlock_queue:{"+name+"}").Result(); n != 1 {
			return false
		}
		if !sharded {
			subs, _ := srv.PubSubNumSub(ctx, ch).Result()
			return subs[ch] == 1
		}
		subs, _ := srv.PubSubShardNumSub(ctx, ch).Result()
		return subs[ch] == 1
	})
}

// waitingOn is waiting on the cluster node that serves name.
func waitingOn(t *testing.T, ctx context.Context, cl *redistest.Cluster, name string) {
	t.Helper()
	node, err := cl.MasterFor(ctx, name)
	require.NoError(t, err)
	waiting(t, ctx, node.Client(), name, true)
}

// awaitErr fails the test unless ch yields a nil error within d.
func awaitErr(t *testing.T, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	require.NoError(t, testsupport.Recv(t, ch, d, what), what)
}

// moveSlotAway migrates the slot of name to another master.
func moveSlotAway(t *testing.T, ctx context.Context, cl *redistest.Cluster, name string) {
	t.Helper()
	from, err := cl.MasterFor(ctx, name)
	require.NoError(t, err)
	for _, m := range cl.Masters {
		if m != from {
			require.NoError(t, cl.MigrateSlot(ctx, redistest.Slot(name), m))
			return
		}
	}
	t.Fatal("no other master")
}

func TestClusterMasterKilled(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	ctx := testsupport.Ctx(t)
	const timeout = 10 * time.Second // longer than a fail-over: holds survive it
	a := locktest.New(t, cl.NewClient(), lockmw.WithWatchdogTimeout(timeout))
	b := locktest.New(t, cl.NewClient(), lockmw.WithWatchdogTimeout(timeout))

	// Locks on names over all slots; one master is about to die.
	names := make([]string, 12)
	holds := make([]context.Context, len(names))
	for i := range names {
		names[i] = fmt.Sprintf("failover-%d", i)
		holds[i] = locktest.MustLock(t, a.Mutex(names[i]), ctx)
	}
	victim, err := cl.MasterFor(ctx, names[0])
	require.NoError(t, err)
	var onVictim []int
	for i, n := range names {
		if m, err := cl.MasterFor(ctx, n); err == nil && m == victim {
			onVictim = append(onVictim, i)
		}
	}
	// A waiter on a lock of the victim, subscribed through sharded pub/sub.
	waiter := lockAsync(ctx, b.Mutex(names[0]))
	waitingOn(t, ctx, cl, names[0])
	// Replication reaches the replica before the kill (a keyless WAIT through
	// the cluster client went to any node, on a connection that had written
	// nothing, and waited for nothing: on a loaded machine the locks were not
	// all on the replica yet).
	require.NoError(t, cl.WaitReplicated(ctx, victim))

	promoted, err := cl.KillMaster(ctx, victim)
	require.NoError(t, err)

	// The lock of names[1..] on the victim vanished in the fail-over (we
	// delete it on the new master, as a lost replication would): its holder
	// is told at its next renewal instead of believing it still holds it.
	if len(onVictim) > 1 {
		i := onVictim[1]
		require.NoError(t, promoted.Client().Del(ctx, names[i]).Err())
		testsupport.Done(t, holds[i], timeout, "holder of a vanished lock")
		assert.ErrorIs(t, context.Cause(holds[i]), lockmw.ErrLockLost)
	}
	// The waiter follows the slot to its new master and gets the lock when
	// it is released there.
	require.NoError(t, a.Mutex(names[0]).Unlock(holds[0]))
	awaitErr(t, waiter, 15*time.Second, "waiter after the fail-over")
	for i, h := range holds {
		if i == 0 || (len(onVictim) > 1 && i == onVictim[1]) {
			continue
		}
		require.NoError(t, h.Err(), "hold %d survives the fail-over", i)
		require.NoError(t, a.Mutex(names[i]).Unlock(h))
	}
}

func TestClusterSlotMigratedUnderWaiter(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	a := locktest.New(t, cl.NewClient())
	b := locktest.New(t, cl.NewClient())
	const name = "migrating"
	h := locktest.MustLock(t, a.Mutex(name), ctx)
	waiter := lockAsync(ctx, b.Mutex(name))
	waitingOn(t, ctx, cl, name)
	moveSlotAway(t, ctx, cl, name)
	// The unlock runs on the new owner (MOVED) and hands the lock to the
	// waiter, whose subscription moved with the slot.
	require.NoError(t, a.Mutex(name).Unlock(h))
	awaitErr(t, waiter, 10*time.Second, "waiter after the slot moved")
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t, 1, 3)
	ctx := testsupport.Ctx(t)
	const timeout = 3 * time.Second
	a := locktest.New(t, s.Client(), lockmw.WithWatchdogTimeout(timeout))
	b := locktest.New(t, s.Client(), lockmw.WithWatchdogTimeout(timeout))

	h1 := locktest.MustLock(t, a.Mutex("sentinel-1"), ctx)
	h2 := locktest.MustLock(t, a.Mutex("sentinel-2"), ctx)
	waiter := lockAsync(ctx, b.Mutex("sentinel-2"))
	waiting(t, ctx, s.Client(), "sentinel-2", false)
	old, err := s.KillMaster(ctx)
	require.NoError(t, err)
	newMaster, err := s.WaitFailover(ctx, old)
	require.NoError(t, err)

	// A lock that vanished in the fail-over is reported to its holder.
	require.NoError(t, newMaster.Client().Del(ctx, "sentinel-1").Err())
	testsupport.Done(t, h1, 2*timeout, "holder of a vanished lock")
	assert.ErrorIs(t, context.Cause(h1), lockmw.ErrLockLost)
	assert.ErrorIs(t, a.Mutex("sentinel-1").Unlock(h1), lockmw.ErrLockLost)

	// The client follows the new master: new locks, and the waiter gets its turn.
	h3, err := a.Mutex("sentinel-3").TryLock(ctx, 5*time.Second, 0)
	require.NoError(t, err, "locks on the new master")
	require.NoError(t, a.Mutex("sentinel-3").Unlock(h3))
	if err := a.Mutex("sentinel-2").Unlock(h2); err != nil && !errors.Is(err, lockmw.ErrLockLost) {
		t.Fatal(err)
	}
	awaitErr(t, waiter, 10*time.Second, "waiter after the fail-over")
}

// A manual fail-over (CLUSTER FAILOVER on the replica) demotes the old master:
// Redis drops its shard subscribers with a sunsubscribe of its own, and the
// waiter must subscribe again on the new master and still get its turn.
func TestClusterManualFailoverUnderWaiter(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	ctx := testsupport.Ctx(t)
	a := locktest.New(t, cl.NewClient())
	b := locktest.New(t, cl.NewClient())
	const name = "manual-failover"
	h := locktest.MustLock(t, a.Mutex(name), ctx)
	waiter := lockAsync(ctx, b.Mutex(name))
	waitingOn(t, ctx, cl, name)
	master, err := cl.MasterFor(ctx, name)
	require.NoError(t, err)
	replica, err := cl.ReplicaOf(ctx, master)
	require.NoError(t, err)
	require.NoError(t, cl.Failover(ctx, replica, ""))
	require.NoError(t, h.Err(), "the hold survives a manual fail-over (nothing is lost)")
	require.NoError(t, a.Mutex(name).Unlock(h))
	awaitErr(t, waiter, 10*time.Second, "waiter after the manual fail-over")
}

// Waiters on names of many slots share one pub/sub connection per node: the
// issue's "one pub/sub connection per client per Redis node", on a cluster.
// Then a slot of one of them moves to another node and its waiter still gets
// the hand-off, as do all the others.
func TestClusterPubSubConnectionPerNode(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	a := locktest.New(t, cl.NewClient())
	b := locktest.New(t, cl.NewClient(func(o *redis.ClusterOptions) { o.ClientName = "rlock-waiter" }))

	const n = 24
	names := make([]string, n)
	holds := make([]context.Context, n)
	waiters := make([]<-chan error, n)
	slots := map[int]bool{}
	for i := range n {
		names[i] = fmt.Sprintf("per-node-%d", i)
		slots[redistest.Slot(names[i])] = true
		holds[i] = locktest.MustLock(t, a.Mutex(names[i]), ctx)
		waiters[i] = lockAsync(ctx, b.Mutex(names[i]))
	}
	require.Greater(t, len(slots), len(cl.Masters), "names on more slots than nodes")
	testsupport.Eventually(t, 10*time.Second, "every waiter queued", func() bool {
		for _, name := range names {
			if k, _ := cl.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result(); k != 1 {
				return false
			}
		}
		return true
	})
	conns := func() (total int) {
		for _, m := range cl.Masters {
			list, err := m.Client().ClientList(ctx).Result()
			require.NoError(t, err)
			per := 0
			for _, line := range strings.Split(list, "\n") {
				if strings.Contains(line, "name=rlock-waiter") && strings.Contains(line, "flags=P") {
					per++
				}
			}
			assert.LessOrEqual(t, per, 1, "the waiting client's pub/sub connections to %s", m.Addr())
			total += per
		}
		return total
	}
	assert.Equal(t, len(cl.Masters), conns(), "one per node")

	// Move the first name's slot to another node under its waiter.
	moveSlotAway(t, ctx, cl, names[0])
	// Each waiter gets its hand-off well before its own retry (a third of
	// the 30 s watchdog timeout), so through its subscription.
	for i, name := range names {
		require.NoError(t, a.Mutex(name).Unlock(holds[i]))
		awaitErr(t, waiters[i], 5*time.Second, "waiter of "+name)
	}
	assert.LessOrEqual(t, conns(), len(cl.Masters), "still one per node after the move")
}
