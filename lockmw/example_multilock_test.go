package lockmw_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// A transfer between two accounts holds both accounts' locks or neither.
// Two transfers over the same accounts, in opposite directions, never
// deadlock: a MultiLock never waits while it holds a member.
func ExampleClient_MultiLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr}) // your Redis
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	transfer := func(ctx context.Context, from, to string) error {
		both := locks.MultiLock(locks.Mutex("account:"+from), locks.Mutex("account:"+to))
		return lockmw.WithLock(ctx, both, func(hold context.Context) error {
			// Both accounts are held: move the money. hold is cancelled if
			// either lock is lost.
			return nil
		})
	}
	ctx := context.Background()
	fmt.Println(transfer(ctx, "alice", "bob"), transfer(ctx, "bob", "alice"))

	// When a member stays busy, nothing is held and the error names it.
	other := lockmw.New(rdb)
	defer other.Close()
	bob := other.Mutex("account:bob")
	hold, _ := bob.Lock(ctx)
	both := locks.MultiLock(locks.Mutex("account:alice"), locks.Mutex("account:bob"))
	_, err := both.TryLock(ctx, 0, 0) // a single attempt
	var busy *lockmw.BusyError
	fmt.Println(errors.Is(err, lockmw.ErrNotAcquired), errors.As(err, &busy) && busy.Name == "account:bob")
	_ = bob.Unlock(hold)
	// Output:
	// <nil> <nil>
	// true true
}
