// Command withlock shows rlock's decorators, which run a function inside a
// distributed lock without Lock and Unlock in sight:
//
//   - lockmw.WithLock runs a function while holding a lock; a nested call with
//     the hold context re-enters, and a second owner that only makes one
//     attempt (WithWait(0)) is turned away;
//   - lockmw.Do returns a value: ten goroutines on two Clients hand out
//     invoice numbers with a read-modify-write on Redis, none lost or repeated;
//   - lockmw.Wrap is the annotation: a function declared once whose calls lock
//     a name computed from their argument, so calls for one order run one at a
//     time while calls for different orders run in parallel;
//   - a call whose function outlives its lease returns lockmw.ErrLockLost.
//
// Run it with
//
//	go run ./examples/withlock
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set REDIS_ADDR=host:port
// to use a real server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "withlock:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if devredis.Embedded() {
		fmt.Println("using an embedded Redis (set REDIS_ADDR=host:port for a real one)")
	} else {
		fmt.Println("using the Redis at", os.Getenv(devredis.EnvAddr))
	}

	// Two Clients are two owners, like two processes.
	a, b := lockmw.New(rdb), lockmw.New(rdb)
	defer a.Close()
	defer b.Close()

	for _, step := range []func(context.Context, redis.UniversalClient, *lockmw.Client, *lockmw.Client) error{
		withLock, do, wrap, lease,
	} {
		if err := step(ctx, rdb, a, b); err != nil {
			return err
		}
	}
	return nil
}

// withLock: a hold, a re-entry through the hold context, and another owner
// turned away.
func withLock(ctx context.Context, _ redis.UniversalClient, a, b *lockmw.Client) error {
	fmt.Println("\n== WithLock")
	const name = "withlock-demo:report"
	return lockmw.WithLock(ctx, a.Mutex(name), func(ctx context.Context) error {
		n, err := a.Mutex(name).HoldCount(ctx)
		if err != nil {
			return err
		}
		fmt.Println("client A builds the report, hold count", n)

		// A nested call with the hold context re-enters instead of deadlocking.
		err = lockmw.WithLock(ctx, a.Mutex(name), func(ctx context.Context) error {
			n, err := a.Mutex(name).HoldCount(ctx)
			fmt.Println("  nested WithLock re-entered, hold count", n)
			return err
		}, lockmw.WithWait(0))
		if err != nil {
			return err
		}

		// Another owner that makes a single attempt is turned away.
		err = lockmw.WithLock(ctx, b.Mutex(name), func(context.Context) error {
			return errors.New("client B should not get the lock")
		}, lockmw.WithWait(0))
		var busy *lockmw.BusyError
		if !errors.As(err, &busy) {
			return fmt.Errorf("client B: want ErrNotAcquired, got %v", err)
		}
		fmt.Printf("  client B turned away: %v (errors.Is ErrNotAcquired: %v)\n", err, errors.Is(err, lockmw.ErrNotAcquired))
		return nil
	}, lockmw.WithOnRelease(func(_ context.Context, name string, err error) {
		fmt.Printf("released %s (err: %v)\n", name, err)
	}))
}

// do: ten goroutines on two Clients take invoice numbers.
func do(ctx context.Context, rdb redis.UniversalClient, a, b *lockmw.Client) error {
	fmt.Println("\n== Do")
	const counter = "withlock-demo:last-invoice"
	if err := rdb.Del(ctx, counter).Err(); err != nil {
		return err
	}
	next := func(ctx context.Context) (int64, error) {
		// A read-modify-write: without the lock, two callers could read the
		// same number.
		n, err := rdb.Get(ctx, counter).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		return n + 1, rdb.Set(ctx, counter, n+1, 0).Err()
	}
	var (
		mu   sync.Mutex
		got  []int64
		errs []error
		wg   sync.WaitGroup
	)
	for i := range 10 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			n, err := lockmw.Do(ctx, c.Mutex("withlock-demo:invoice-numbers"), next)
			mu.Lock()
			defer mu.Unlock()
			got, errs = append(got, n), append(errs, err)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	fmt.Println("invoice numbers handed out:", got)
	return nil
}

// wrap: an annotation-like function keyed by its argument.
func wrap(ctx context.Context, _ redis.UniversalClient, a, b *lockmw.Client) error {
	fmt.Println("\n== Wrap")
	var (
		mu      sync.Mutex
		running = map[string]int{} // calls in progress per order
		peak    = map[string]int{}
		both    atomic.Int32 // peak number of orders being charged at once
		now     atomic.Int32
	)
	chargeOrder := func(ctx context.Context, orderID string) (string, error) {
		mu.Lock()
		running[orderID]++
		peak[orderID] = max(peak[orderID], running[orderID])
		mu.Unlock()
		n := now.Add(1)
		for p := both.Load(); n > p && !both.CompareAndSwap(p, n); p = both.Load() {
		}
		time.Sleep(20 * time.Millisecond) // the work: call the payment provider
		now.Add(-1)
		mu.Lock()
		running[orderID]--
		mu.Unlock()
		return "receipt for " + orderID, nil
	}
	key := func(orderID string) string { return "lock.billing.charge#" + orderID }
	// Declared once per Client, called like chargeOrder itself.
	charges := []func(context.Context, string) (string, error){
		lockmw.Wrap(a, key, chargeOrder),
		lockmw.Wrap(b, key, chargeOrder),
	}

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		order := []string{"order-1", "order-2", "order-3"}[i%3]
		wg.Go(func() {
			_, err := charges[i%2](ctx, order)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Printf("12 charges for 3 orders: at most %d call(s) per order at once, %d orders at once\n",
		max(peak["order-1"], peak["order-2"], peak["order-3"]), both.Load())

	// A key function that returns "" runs the call without a lock.
	free := lockmw.Wrap(a, func(string) string { return "" }, chargeOrder)
	r, err := free(ctx, "order-4")
	fmt.Println("without a key:", r, err)
	return err
}

// lease: a call that outlives its lease learns that it lost the lock.
func lease(ctx context.Context, _ redis.UniversalClient, a, _ *lockmw.Client) error {
	fmt.Println("\n== WithLease")
	err := lockmw.WithLock(ctx, a.Mutex("withlock-demo:slow"), func(ctx context.Context) error {
		<-ctx.Done() // the work takes longer than the lease
		fmt.Println("fn's context ended:", ctx.Err())
		return nil
	}, lockmw.WithLease(200*time.Millisecond))
	if !errors.Is(err, lockmw.ErrLockLost) {
		return fmt.Errorf("want ErrLockLost, got %v", err)
	}
	fmt.Println("the call returned:", err)
	return nil
}
