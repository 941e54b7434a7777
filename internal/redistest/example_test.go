package redistest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

func ExampleSlot() {
	fmt.Println(redistest.Slot("foo"))
	// A hash tag puts a lock key and its channel in one slot.
	fmt.Println(redistest.Slot("{lock}") == redistest.Slot("redisson_lock__channel:{lock}"))
	// Output:
	// 12182
	// true
}

// A master, one replica and three sentinels; the master crashes and the
// failover client follows the promoted replica.
func ExampleLaunchSentinel() {
	sg, err := redistest.LaunchSentinel(1, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rdb := sg.Client() // a redis.NewFailoverClient, closed by sg.Close
	rdb.Set(ctx, "k", "v", 0)
	rdb.Do(ctx, "WAIT", 1, 1000) // on the replica before the crash

	old, err := sg.KillMaster(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	promoted, err := sg.WaitFailover(ctx, old)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("promoted the replica:", promoted == sg.Replicas[0])
	for ctx.Err() == nil {
		if v, err := rdb.Get(ctx, "k").Result(); err == nil {
			fmt.Println("k =", v)
			break
		}
		time.Sleep(10 * time.Millisecond) // the client reconnects
	}
	// Output:
	// promoted the replica: true
	// k = v
}

// A slot moves to another master, then a forced fail-over hands it to that
// master's replica.
func ExampleCluster_MigrateSlot() {
	cl, err := redistest.LaunchCluster(3, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	key := "{lock}"
	from, _ := cl.MasterFor(ctx, key)
	to := cl.Masters[0]
	if from == to {
		to = cl.Masters[1]
	}
	if err := cl.MigrateSlot(ctx, redistest.Slot(key), to); err != nil {
		fmt.Println(err)
		return
	}
	owner, _ := cl.MasterFor(ctx, key)
	fmt.Println("moved:", owner == to)

	replica, _ := cl.ReplicaOf(ctx, to)
	if err := cl.Failover(ctx, replica, "FORCE"); err != nil {
		fmt.Println(err)
		return
	}
	owner, _ = cl.MasterFor(ctx, key)
	fmt.Println("failed over:", owner == replica)
	// Output:
	// moved: true
	// failed over: true
}
