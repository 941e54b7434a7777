package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// A price list read by many and rewritten now and then: readers share the
// read side, a writer has the lock alone. Four readers read together while
// nobody writes.
func ExampleClient_RWMutex() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr}) // your Redis
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	ctx := context.Background()
	prices := locks.RWMutex("prices:eu")
	var reading, most atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			<-start
			hold, err := prices.RLock(ctx) // shared with other readers
			if err != nil {
				fmt.Println("rlock:", err)
				return
			}
			defer prices.RUnlock(hold)
			n := reading.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			for reading.Load() < 4 && ctx.Err() == nil { // until all four read at once
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()

	hold, err := prices.Lock(ctx) // alone: no reader, no other writer
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println(most.Load(), "readers at once; then the writer alone")
	fmt.Println(prices.Unlock(hold))
	// Output:
	// 4 readers at once; then the writer alone
	// <nil>
}

// The writer may read too (Redisson allows it), and keep reading once it
// stops writing: a downgrade. A reader may not write: Lock with a read hold
// returns ErrUpgrade at once, where Redisson would wait for ever.
func ExampleRWMutex_RLock_downgrade() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	ctx := context.Background()
	catalog := locks.RWMutex("catalog")
	w, _ := catalog.Lock(ctx)
	r, _ := catalog.RLock(w) // the writer's own read hold
	_ = catalog.Unlock(w)    // the write side goes, the read side stays
	fmt.Println("still reading:", r.Err() == nil)

	_, err := catalog.Lock(r)
	fmt.Println("upgrade refused:", errors.Is(err, lockmw.ErrUpgrade))
	fmt.Println(catalog.RUnlock(r))
	// Output:
	// still reading: true
	// upgrade refused: true
	// <nil>
}

// RLocker is the read side as a Locker: the decorators take it.
func ExampleRWMutex_RLocker() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	config := locks.RWMutex("config")
	err := lockmw.WithLock(context.Background(), config.RLocker(), func(ctx context.Context) error {
		fmt.Println("reading the config")
		return nil
	})
	fmt.Println(err)
	// Output:
	// reading the config
	// <nil>
}
