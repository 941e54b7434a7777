package faultproxy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Lose the reply of the first INCR: go-redis times out reading it and sends
// INCR again, which runs a second time. A command that must not count twice
// needs an idempotent script; lockmw's are.
func Example() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	p, err := faultproxy.Start(srv.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: 1})
	defer rdb.Close()
	p.SetRule(faultproxy.Once(func(c faultproxy.Command) bool { return c.Name == "incr" }, faultproxy.Drop))

	n, err := rdb.Incr(context.Background(), "visits").Result()
	fmt.Println(n, err, p.Count("incr"))
	// Output: 2 <nil> 2
}
