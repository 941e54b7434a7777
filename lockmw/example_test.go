package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr}) // your Redis
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	ctx := context.Background()
	m := locks.Mutex("orders:42")
	hold, err := m.Lock(ctx) // waits until the lock is free; renewed by the watchdog
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	defer m.Unlock(hold)

	// Do the work with the hold context: it ends if the lock is lost.
	fmt.Println("holding", m.Name())
	// Output: holding orders:42
}

func ExampleMutex_Lock_reentrant() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	m := locks.Mutex("reentrant-example")

	outer, _ := m.Lock(context.Background())
	inner, err := m.Lock(outer) // the hold context re-enters: no deadlock
	fmt.Println("re-entered:", err == nil)
	n, _ := m.HoldCount(inner)
	fmt.Println("hold count:", n)
	_ = m.Unlock(inner)
	_ = m.Unlock(outer)
	locked, _ := m.IsLocked(context.Background())
	fmt.Println("locked after the last unlock:", locked)
	// Output:
	// re-entered: true
	// hold count: 2
	// locked after the last unlock: false
}

func ExampleMutex_TryLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	serviceA, serviceB := lockmw.New(rdb), lockmw.New(rdb) // two owners, like two processes
	defer serviceA.Close()
	defer serviceB.Close()
	ctx := context.Background()

	hold, _ := serviceA.Mutex("report").Lock(ctx)
	defer serviceA.Mutex("report").Unlock(hold)

	// Wait at most 100ms; hold for at most 10s (no watchdog).
	_, err := serviceB.Mutex("report").TryLock(ctx, 100*time.Millisecond, 10*time.Second)
	var busy *lockmw.BusyError
	if errors.As(err, &busy) {
		fmt.Println("busy:", errors.Is(err, lockmw.ErrNotAcquired), "key expires in", busy.TTL.Round(10*time.Second), "unless renewed")
	}
	// Output: busy: true key expires in 30s unless renewed
}

func ExampleMutex_Token() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	m := locks.Mutex("fenced-example", lockmw.WithFencing())
	ctx := context.Background()

	var tokens []int64
	for range 2 {
		hold, _ := m.Lock(ctx)
		token, _ := m.Token(hold) // no round trip
		tokens = append(tokens, token)
		_ = m.Unlock(hold)
	}
	// Pass the token to the guarded resource; it rejects writes with a lower one.
	fmt.Println("increasing:", tokens[1] > tokens[0])
	// Output: increasing: true
}

func ExampleMutex_ForceUnlock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb, lockmw.WithWatchdogTimeout(300*time.Millisecond))
	defer locks.Close()
	m := locks.Mutex("lost-example")
	ctx := context.Background()

	hold, _ := m.Lock(ctx)
	_, _ = m.ForceUnlock(ctx) // an operator frees the lock

	<-hold.Done() // the holder learns at its next renewal
	fmt.Println("lost:", errors.Is(context.Cause(hold), lockmw.ErrLockLost))
	fmt.Println("unlock:", m.Unlock(hold))
	// Output:
	// lost: true
	// unlock: lockmw: lock lost: renewal found "lost-example" gone or someone else's
}

func ExampleHooks() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	hooks := lockmw.Hooks{
		HoldEnd: func(ctx context.Context, e lockmw.HoldEndEvent) {
			fmt.Printf("%s held, lost=%v\n", e.Name, errors.Is(e.Lost, lockmw.ErrLockLost))
		},
	}
	locks := lockmw.New(rdb, lockmw.WithHooks(hooks))
	defer locks.Close()
	m := locks.Mutex("hooked-example")
	hold, _ := m.Lock(context.Background())
	_ = m.Unlock(hold)
	// Output: hooked-example held, lost=false
}

// Per-entity lock names with a bounded group: the hooks (otelhooks' metrics)
// see the group beside the name, so 10,000 invoices are one series.
func ExampleWithGroup() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb, lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			fmt.Printf("holding %s, group %q\n", e.Name, e.Group)
			return ctx
		},
	}))
	defer locks.Close()

	for _, id := range []string{"1001", "1002"} {
		m := locks.Mutex("invoice:"+id, lockmw.WithGroup("invoice"))
		_ = lockmw.WithLock(context.Background(), m, func(context.Context) error { return nil })
	}
	// Output:
	// holding invoice:1001, group "invoice"
	// holding invoice:1002, group "invoice"
}
