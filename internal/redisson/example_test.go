package redisson_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Two Redisson processes take turns on one lock: the second waits until the
// first's unlock publishes "0".
func ExampleClient() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	java1, java2 := redisson.NewClient(rdb), redisson.NewClient(rdb)
	defer java1.Close()
	defer java2.Close()

	first, second := java1.GetLock("invoice:42"), java2.GetLock("invoice:42")
	_ = first.Lock(ctx, 1, 0)
	done := make(chan error)
	go func() { done <- second.Lock(ctx, 1, 0) }() // waits for the "0"
	_ = first.Unlock(ctx, 1)
	fmt.Println("second holds it:", <-done == nil)
	fmt.Println(second.Unlock(ctx, 1), second.Unlock(ctx, 1))
	// Output:
	// second holds it: true
	// <nil> redisson: attempt to unlock lock, not locked by current thread
}

// Two Redisson processes share a semaphore of one permit: the second waits
// until the first's release publishes the count it leaves.
func ExampleSemaphore() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	java1, java2 := redisson.NewClient(rdb), redisson.NewClient(rdb)
	defer java1.Close()
	defer java2.Close()

	first := java1.GetPermitExpirableSemaphore("exports")
	second := java2.GetPermitExpirableSemaphore("exports")
	set, _ := first.TrySetPermits(ctx, 1)
	id, _ := first.Acquire(ctx, time.Minute)
	done := make(chan error)
	go func() { // waits for the release's message
		id, err := second.Acquire(ctx, -1)
		if err == nil {
			err = second.Release(ctx, id)
		}
		done <- err
	}()
	_ = first.Release(ctx, id)
	fmt.Println("set:", set, "second took and released it:", <-done == nil)
	err = first.Release(ctx, id)
	fmt.Println(errors.Is(err, redisson.ErrPermitNotHeld))
	// Output:
	// set: true second took and released it: true
	// true
}

// A Redisson process's reader and another's share a read-write lock; a
// writer waits until the last reader's unlock publishes "0".
func ExampleReadWriteLock() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	java1, java2 := redisson.NewClient(rdb), redisson.NewClient(rdb)
	defer java1.Close()
	defer java2.Close()

	r1 := java1.GetReadWriteLock("catalog").ReadLock()
	r2 := java2.GetReadWriteLock("catalog").ReadLock()
	w := java2.GetReadWriteLock("catalog").WriteLock()
	_ = r1.Lock(ctx, 1, 0)
	shared, _ := r2.TryLock(ctx, 1, 0, 0)
	fmt.Println("readers share:", shared, "mode:", rdb.HGet(ctx, "catalog", "mode").Val())
	_ = r2.Unlock(ctx, 1)
	done := make(chan error)
	go func() { done <- w.Lock(ctx, 2, 0) }() // waits for the "0"
	_ = r1.Unlock(ctx, 1)
	fmt.Println("writer holds it:", <-done == nil, "mode:", rdb.HGet(ctx, "catalog", "mode").Val())
	fmt.Println(w.Unlock(ctx, 2))
	// Output:
	// readers share: true mode: read
	// writer holds it: true mode: write
	// <nil>
}
