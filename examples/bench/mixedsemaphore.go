package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// The mixed scenario on a semaphore (-mixed-permits N): rlock workers take
// permits of a lockmw.Semaphore, Redisson workers of Redisson's
// RPermitExpirableSemaphore, on one name of N permits.

// rlockSemLocker is an rlock Semaphore of a Client of its own.
type rlockSemLocker struct {
	c *lockmw.Client
	s *lockmw.Semaphore
}

func newRlockSemLocker(rdb *redis.Client, name string, permits int) *rlockSemLocker {
	c := lockmw.New(rdb)
	return &rlockSemLocker{c: c, s: c.Semaphore(name, permits)}
}

func (l *rlockSemLocker) lock(ctx context.Context) (context.Context, error) { return l.s.Lock(ctx) }
func (l *rlockSemLocker) unlock(hctx context.Context) error                 { return l.s.Unlock(hctx) }
func (l *rlockSemLocker) close() error                                      { return l.c.Close() }

// redissonSemThread is the one thread of its own Redisson process taking
// permits of a semaphore (internal/redisson, written from Redisson 4.7.0's
// RedissonPermitExpirableSemaphore): it waits as acquire() does, waking on
// a published count or when the earliest lease runs out.
type redissonSemThread struct {
	c       *redisson.Client
	s       *redisson.Semaphore
	permits int
	set     bool   // trySetPermits was called
	id      string // the permit held
}

// newRedissonSemThread returns the thread; slow gives its process
// redisson.WithSlowWake.
func newRedissonSemThread(rdb *redis.Client, name string, permits int, slow bool) *redissonSemThread {
	var opts []redisson.Option
	if slow {
		opts = append(opts, redisson.WithSlowWake())
	}
	c := redisson.NewClient(rdb, opts...)
	return &redissonSemThread{c: c, s: c.GetPermitExpirableSemaphore(name), permits: permits}
}

// lock takes a permit without a lease (acquire()), the first time after
// trySetPermits, as a Redisson service must call it once (rlock's workers
// usually set it first).
func (r *redissonSemThread) lock(ctx context.Context) (context.Context, error) {
	if !r.set {
		if _, err := r.s.TrySetPermits(ctx, r.permits); err != nil {
			return ctx, err
		}
		r.set = true
	}
	id, err := r.s.Acquire(ctx, -1)
	r.id = id
	return ctx, err
}

func (r *redissonSemThread) unlock(hctx context.Context) error {
	return r.s.Release(context.WithoutCancel(hctx), r.id)
}

func (r *redissonSemThread) close() error { return r.c.Close() }

// newMixedLocker returns a worker's locker of side ("rlock" or "redisson")
// in the mixed scenario: a mutex, or with cfg.mixedPermits > 0 a semaphore.
func newMixedLocker(cfg config, rdb *redis.Client, name, side string) locker {
	switch {
	case cfg.mixedPermits > 0 && side == "rlock":
		return newRlockSemLocker(rdb, name, cfg.mixedPermits)
	case cfg.mixedPermits > 0:
		return newRedissonSemThread(rdb, name, cfg.mixedPermits, cfg.slowWake)
	case side == "rlock":
		return newRlockLocker(rdb, name)
	}
	return newRedissonThread(rdb, name, cfg.slowWake)
}

// mixedName is the name the pair mx takes turns on.
func mixedName(cfg config, mx mix) string {
	if cfg.mixedPermits > 0 {
		return fmt.Sprintf("rlock-bench:mixed-sem%d:%s", cfg.mixedPermits, mx)
	}
	return "rlock-bench:mixed:" + mx.String()
}

// overHolders counts holds that began while permits others were held (not
// yet at their Unlock call): more holders than permits at once.
func overHolders(turns [][]turn, end time.Duration, permits int) int {
	all := acquiredBy(turns, end)
	n := 0
	for i, t := range all {
		held := 0
		for _, u := range all[:i] {
			if u.unlockCall > t.acquired {
				held++
			}
		}
		if held >= permits {
			n++
		}
	}
	return n
}
