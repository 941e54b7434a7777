// Package devredis gives the examples a Redis to talk to with nothing to
// install.
//
// [Client] connects to the server at $REDIS_ADDR when that variable is set
// (for example REDIS_ADDR=127.0.0.1:6379 go run ./examples/demo). Otherwise it
// starts an embedded, in-process miniredis on a free loopback port, with
// key TTLs following the wall clock, so that expiring keys (lock leases)
// behave as they do on a real server.
//
// The embedded server is only for the demos: tests use real redis-server
// processes (internal/redistest), since miniredis implements the commands
// but not every detail of Redis (for example pub/sub timing and cluster
// behaviour).
package devredis

import (
	"context"
	"fmt"
	"os"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EnvAddr is the environment variable naming an external Redis server.
const EnvAddr = "REDIS_ADDR"

// Client returns a client for $REDIS_ADDR, or for a freshly started embedded
// miniredis if it is unset or empty, after checking with PING (bounded by
// ctx) that the server answers. The returned function closes the client and
// the embedded server, if any; call it when done.
func Client(ctx context.Context) (redis.UniversalClient, func(), error) {
	if addr := os.Getenv(EnvAddr); addr != "" {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		if err := c.Ping(ctx).Err(); err != nil {
			_ = c.Close()
			return nil, nil, fmt.Errorf("devredis: redis at %s=%s: %w", EnvAddr, addr, err)
		}
		return c, func() { _ = c.Close() }, nil
	}

	m := miniredis.NewMiniRedis()
	// TTLs count down with the wall clock instead of only on FastForward.
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("devredis: starting embedded redis: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		m.Close()
		return nil, nil, fmt.Errorf("devredis: embedded redis at %s: %w", m.Addr(), err)
	}
	return c, func() {
		_ = c.Close()
		m.Close()
	}, nil
}

// Embedded reports whether Client will start an embedded server, that is
// whether $REDIS_ADDR is unset or empty.
func Embedded() bool { return os.Getenv(EnvAddr) == "" }
