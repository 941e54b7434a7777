package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// decExampleRedis starts a throw-away redis-server for an example and returns
// a go-redis client for it and the function that stops it. A real program
// passes its own go-redis client to lockmw.New.
func decExampleRedis() (redis.UniversalClient, func()) {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		panic(err)
	}
	return srv.Client(), func() { _ = srv.Close() }
}

func ExampleWithLock() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()
	ctx := context.Background()

	err := lockmw.WithLock(ctx, c.Mutex("invoice:42"), func(ctx context.Context) error {
		// Only one process at a time bills invoice 42. ctx is the hold
		// context: it is cancelled if the lock is lost.
		fmt.Println("billing invoice 42")
		return nil
	})
	if errors.Is(err, lockmw.ErrLockLost) {
		fmt.Println("the lock was lost while billing: check the invoice")
	} else if err != nil {
		fmt.Println("error:", err)
	}
	// Output: billing invoice 42
}

func ExampleDo() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()
	ctx := context.Background()

	next, err := lockmw.Do(ctx, c.Mutex("invoice-numbers"), func(ctx context.Context) (int64, error) {
		// A read-modify-write that must not interleave with another one.
		n, err := rdb.Get(ctx, "last-invoice").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		return n + 1, rdb.Set(ctx, "last-invoice", n+1, 0).Err()
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("next invoice number:", next)
	// Output: next invoice number: 1
}

// chargeOrder is the function that ExampleWrap guards.
func chargeOrder(ctx context.Context, orderID string) (string, error) {
	return "receipt for " + orderID, nil
}

func ExampleWrap() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()
	ctx := context.Background()

	// Declared once, like an annotation: calls for the same order run one at
	// a time, calls for different orders in parallel.
	charge := lockmw.Wrap(c, func(orderID string) string { return "lock.billing.charge#" + orderID }, chargeOrder,
		lockmw.WithOnAcquire(func(ctx context.Context, name string) { fmt.Println("locked", name) }))

	receipt, err := charge(ctx, "order-7")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(receipt)
	// Output:
	// locked lock.billing.charge#order-7
	// receipt for order-7
}

func ExampleWrap_funcName() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()

	// With a nil key every call locks the function's qualified name.
	charge := lockmw.Wrap(c, nil, chargeOrder,
		lockmw.WithOnAcquire(func(ctx context.Context, name string) { fmt.Println("locked", name) }))
	if _, err := charge(context.Background(), "order-7"); err != nil {
		fmt.Println("error:", err)
	}
	// Output: locked github.com/go-rlock/rlock/lockmw_test.chargeOrder
}

func ExampleWithWait() {
	rdb, stop := decExampleRedis()
	defer stop()
	ctx := context.Background()

	// Another process holds the nightly report's lock.
	other := lockmw.New(rdb)
	defer other.Close()
	hctx, err := other.Mutex("report:nightly").Lock(ctx)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer other.Mutex("report:nightly").Unlock(hctx)

	c := lockmw.New(rdb)
	defer c.Close()
	// WithWait(0): one attempt; skip the work if someone else is on it.
	err = lockmw.WithLock(ctx, c.Mutex("report:nightly"), func(ctx context.Context) error {
		fmt.Println("building the report")
		return nil
	}, lockmw.WithWait(0))
	if errors.Is(err, lockmw.ErrNotAcquired) {
		fmt.Println("someone else is building the report")
	}
	// Output: someone else is building the report
}

func ExampleWithOnRelease() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()

	err := lockmw.WithLock(context.Background(), c.Mutex("cache:rebuild"), func(ctx context.Context) error {
		fmt.Println("rebuilding")
		return nil
	},
		lockmw.WithOnAcquire(func(ctx context.Context, name string) { fmt.Println("acquired", name) }),
		lockmw.WithOnRelease(func(ctx context.Context, name string, err error) {
			fmt.Println("released", name, "err:", err)
		}))
	if err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// acquired cache:rebuild
	// rebuilding
	// released cache:rebuild err: <nil>
}

func ExampleWithLease() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()

	// With a lease nothing renews the lock: it expires after 10s even if this
	// process freezes, and fn's context has a deadline at the lease end. A fn
	// that outlives the lease makes the call return ErrLockLost.
	err := lockmw.WithLock(context.Background(), c.Mutex("export:daily"), func(ctx context.Context) error {
		_, hasDeadline := ctx.Deadline()
		fmt.Println("deadline at the lease end:", hasDeadline)
		return nil
	}, lockmw.WithLease(10*time.Second))
	if err != nil {
		fmt.Println("error:", err)
	}
	// Output: deadline at the lease end: true
}

func ExampleWithOnAcquire() {
	rdb, stop := decExampleRedis()
	defer stop()
	c := lockmw.New(rdb)
	defer c.Close()
	m := c.Mutex("cache:warm")

	err := lockmw.WithLock(context.Background(), m, func(ctx context.Context) error { return nil },
		lockmw.WithOnAcquire(func(ctx context.Context, name string) {
			// ctx is the hold context, the one fn gets.
			held, err := m.IsHeld(ctx)
			fmt.Println("acquired", name, "held:", held, err)
		}))
	if err != nil {
		fmt.Println("error:", err)
	}
	// Output: acquired cache:warm held: true <nil>
}
