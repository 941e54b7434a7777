package goredis_test

import (
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
)

// A quorum over three independent masters, each a go-redis back-end (a
// back-end of another client may stand beside them).
func ExampleNew() {
	var masters []backend.Backend
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		masters = append(masters, goredis.New(redis.NewClient(&redis.Options{Addr: addr})))
	}
	locks := lockmw.NewQuorumOf(masters)
	defer locks.Close()
}
