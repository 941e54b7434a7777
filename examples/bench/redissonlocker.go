package main

import (
	"context"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/redis/go-redis/v9"
)

// redissonThread is the one thread of its own Redisson process
// (internal/redisson, written from Redisson 4.7.0's RedissonLock) taking a
// lock: it waits as a Java service's RLock.lock() does, waking on "0" or
// when the holder's TTL runs out.
type redissonThread struct {
	c *redisson.Client
	l *redisson.Lock
}

// redissonThreadID is the thread's id in its process.
const redissonThreadID = 1

var _ locker = (*redissonThread)(nil)

// newRedissonThread returns the thread; slow gives its process
// redisson.WithSlowWake.
func newRedissonThread(rdb *redis.Client, name string, slow bool) *redissonThread {
	var opts []redisson.Option
	if slow {
		opts = append(opts, redisson.WithSlowWake())
	}
	c := redisson.NewClient(rdb, opts...)
	return &redissonThread{c: c, l: c.GetLock(name)}
}

// lock takes the lock with Redisson's default lease (no watchdog: the
// tool holds it for milliseconds).
func (r *redissonThread) lock(ctx context.Context) (context.Context, error) {
	return ctx, r.l.Lock(ctx, redissonThreadID, 0)
}

func (r *redissonThread) unlock(hctx context.Context) error {
	return r.l.Unlock(context.WithoutCancel(hctx), redissonThreadID)
}

func (r *redissonThread) close() error { return r.c.Close() }
