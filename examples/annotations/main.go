// Command annotations shows locks written on interface methods: the
// //rlock:lock directives of billing.Billing, and the decorator rlockgen
// generates from them (billing/billing_rlock.go), Go's form of Redisson's
// @RequestLockable, lock4j's @Lock4j and ShedLock's @SchedulerLock:
//
//   - eight calls charge one order at once through two instances (two
//     Clients, like two processes): they take turns on the order's lock, and
//     the payment provider is called once;
//   - a call on another order runs beside them;
//   - Refund's key reads a field of its *Order: a nil order is an error
//     matching lockmw.ErrInvalidArgument, not a panic;
//   - Quote has no directive and takes no lock.
//
// Run it with
//
//	go run ./examples/annotations
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set REDIS_ADDR=host:port
// to use a real server. After changing the directives, regenerate with
//
//	go generate ./examples/annotations/...
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/examples/annotations/billing"
	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/lockmw"
)

func main() {
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, "annotations:", err)
		os.Exit(1)
	}
}

// start connects to Redis and runs the example on it.
func start() error {
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
	return run(ctx, os.Stdout, rdb)
}

// run charges, refunds and quotes through two locked instances of the
// billing service on rdb, printing what happens to out.
func run(ctx context.Context, out io.Writer, rdb redis.UniversalClient) error {
	svc := billing.NewService(rdb, "annotations-example:")
	if err := svc.Reset(ctx, "order-7", "order-8"); err != nil {
		return err
	}
	// Two Clients are two owners, like two processes running the service.
	a, b := lockmw.New(rdb), lockmw.New(rdb)
	defer a.Close()
	defer b.Close()
	instances := []billing.Billing{billing.NewLockedBilling(a, svc), billing.NewLockedBilling(b, svc)}

	fmt.Fprintln(out, "== Charge: eight calls on order-7 at once, one on order-8")
	receipts, err := chargeAtOnce(ctx, instances)
	if err != nil {
		return err
	}
	newOnes := 0
	for _, r := range receipts {
		if r.New {
			newOnes++
		}
	}
	payments, err := svc.Payments(ctx, "order-7")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "order-7: %d receipts, %d new; the payment provider was called %d time(s)\n", len(receipts), newOnes, payments)
	payments, err = svc.Payments(ctx, "order-8")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "order-8: the payment provider was called %d time(s)\n", payments)

	fmt.Fprintln(out, "\n== Refund: the key is billing:refund#{o.ID}")
	if err := instances[0].Refund(ctx, &billing.Order{ID: "order-7"}); err != nil {
		return err
	}
	fmt.Fprintln(out, "refunded order-7")
	err = instances[0].Refund(ctx, nil)
	fmt.Fprintf(out, "a nil order: %v (errors.Is ErrInvalidArgument: %v)\n", err, errors.Is(err, lockmw.ErrInvalidArgument))

	fmt.Fprintln(out, "\n== Quote: no directive, no lock")
	price, err := instances[1].Quote(ctx, "order-7")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "order-7 costs", price)
	return nil
}

// chargeAtOnce charges order-7 eight times at once, half through each
// instance, and order-8 once beside them; it returns order-7's receipts.
func chargeAtOnce(ctx context.Context, instances []billing.Billing) ([]billing.Receipt, error) {
	var (
		mu       sync.Mutex
		receipts []billing.Receipt
		errs     []error
		wg       sync.WaitGroup
	)
	for i := range 8 {
		wg.Go(func() {
			r, err := instances[i%2].Charge(ctx, "order-7", 1250)
			mu.Lock()
			defer mu.Unlock()
			receipts, errs = append(receipts, r), append(errs, err)
		})
	}
	wg.Go(func() {
		_, err := instances[1].Charge(ctx, "order-8", 990)
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	})
	wg.Wait()
	return receipts, errors.Join(errs...)
}
