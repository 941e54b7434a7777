package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redislockWait bounds one Obtain's wait, as bsm/redislock's README does
// with a deadline on the context: far longer than any run waits.
const redislockWait = time.Minute

// redislockLocker is a bsm/redislock Client on one go-redis client,
// obtaining a pollTTL lease with a LinearBackoff(retry) retry strategy.
type redislockLocker struct {
	c     *redislock.Client
	key   string
	retry time.Duration
}

func newRedislockLocker(rdb redis.UniversalClient, key string, retry time.Duration) *redislockLocker {
	return &redislockLocker{c: redislock.New(rdb), key: key, retry: retry}
}

type redislockKey struct{}

func (r *redislockLocker) lock(ctx context.Context) (context.Context, error) {
	wctx, cancel := context.WithTimeout(ctx, redislockWait)
	defer cancel()
	l, err := r.c.Obtain(wctx, r.key, pollTTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(r.retry)})
	if err != nil {
		if ctx.Err() != nil {
			return ctx, ctx.Err()
		}
		return ctx, fmt.Errorf("redislock: %w", err)
	}
	return context.WithValue(ctx, redislockKey{}, l), nil
}

// errRedislockNoHold is unlock's error for a context lock did not return.
var errRedislockNoHold = errors.New("redislock: no lock in the hold context")

func (r *redislockLocker) unlock(hctx context.Context) error {
	l, _ := hctx.Value(redislockKey{}).(*redislock.Lock)
	if l == nil {
		return errRedislockNoHold
	}
	if err := l.Release(context.WithoutCancel(hctx)); err != nil {
		return fmt.Errorf("redislock: %w", err)
	}
	return nil
}

func (r *redislockLocker) close() error { return nil }
