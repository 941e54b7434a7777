package lockmw_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// At most 2 exports per tenant at once, across every process: a semaphore of
// 2 permits named after the tenant. Five exports start; never more than two
// run together.
func ExampleClient_Semaphore() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr}) // your Redis
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	ctx := context.Background()
	exports := locks.Semaphore("exports:tenant-7", 2)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			hold, err := exports.Lock(ctx) // waits for a free permit; renewed by the watchdog
			if err != nil {
				fmt.Println("lock:", err)
				return
			}
			defer exports.Unlock(hold)
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(10 * time.Millisecond) // the export, with the hold context
			running.Add(-1)
		})
	}
	wg.Wait()
	fmt.Println("at most", most.Load(), "at once")
	// Output: at most 2 at once
}

// Wrap with WithPermits limits each key of a function: here at most 3 calls
// per upstream host run at once.
func ExampleWithPermits() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	fetch := lockmw.Wrap(locks, func(host string) string { return "upstream:" + host },
		func(ctx context.Context, host string) (string, error) {
			return "fetched from " + host, nil // at most 3 of these per host at once
		}, lockmw.WithPermits(3))
	out, err := fetch(context.Background(), "api.example.com")
	fmt.Println(out, err)
	// Output: fetched from api.example.com <nil>
}
