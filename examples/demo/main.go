// Command demo is the rlock demo; run it with
//
//	make demo
//
// or go run ./examples/demo. It needs nothing installed: without REDIS_ADDR
// it runs against an embedded in-process Redis (see
// examples/internal/devredis); set REDIS_ADDR=host:port to use a real server.
//
// For now it is a placeholder that shows the primitive a lock is built on:
// SET key value NX PX <lease> takes the key only if nobody holds it, and the
// lease makes the key expire if its holder dies. It takes the key
// "rlock-demo", shows that a second taker is refused, and releases it. The
// real demo (reentrancy, watchdog renewal, wake-up on release, fencing
// tokens) replaces it once the lock package exists.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-rlock/rlock/examples/internal/devredis"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	where := "embedded Redis"
	if !devredis.Embedded() {
		where = "Redis at " + os.Getenv(devredis.EnvAddr)
	}

	const key, lease = "rlock-demo", 10 * time.Second
	ok, err := rdb.SetNX(ctx, key, "demo-owner", lease).Result()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is already held by someone else", key)
	}
	ttl := rdb.PTTL(ctx, key).Val()
	fmt.Printf("took %q on %s with SET NX PX %d (expires in %v unless released)\n", key, where, lease.Milliseconds(), ttl.Round(100*time.Millisecond))

	again, err := rdb.SetNX(ctx, key, "someone-else", lease).Result()
	if err != nil {
		return err
	}
	fmt.Printf("a second SET NX on %q while held: taken=%v\n", key, again)

	if err := rdb.Del(ctx, key).Err(); err != nil {
		return err
	}
	fmt.Printf("released %q with DEL\n", key)
	fmt.Println("demo done")
	return nil
}
