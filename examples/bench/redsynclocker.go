package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// peerRetry is the short retry interval of the "-1ms" rows and of setnx.
const peerRetry = time.Millisecond

// redsyncLocker is a go-redsync/redsync v4 Mutex on one go-redis client
// (one pool: a single Redis, quorum 1), with redsync's defaults (8 s
// expiry, no extension: the benchmark holds for milliseconds). With retry
// 0 it keeps redsync's retry (32 tries, 50–250 ms apart); then Lock fails
// after about 5 s and lock calls it again, as a caller that needs the lock
// would. With a retry it tries every retry, as often as it takes.
type redsyncLocker struct {
	m *redsync.Mutex
}

func newRedsyncLocker(rdb redis.UniversalClient, name string, retry time.Duration) *redsyncLocker {
	var opts []redsync.Option
	if retry > 0 {
		opts = append(opts, redsync.WithRetryDelay(retry), redsync.WithTries(math.MaxInt32))
	}
	rs := redsync.New(goredis.NewPool(rdb))
	return &redsyncLocker{m: rs.NewMutex(name, opts...)}
}

func (r *redsyncLocker) lock(ctx context.Context) (context.Context, error) {
	for {
		err := r.m.LockContext(ctx)
		var taken *redsync.ErrTaken
		switch {
		case err == nil:
			return ctx, nil
		case ctx.Err() != nil:
			return ctx, ctx.Err()
		case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken):
			continue // out of tries: wait on
		default:
			return ctx, fmt.Errorf("redsync: %w", err)
		}
	}
}

// errRedsyncNotHeld is unlock's error when redsync found the lock gone.
var errRedsyncNotHeld = errors.New("redsync: lock not held at unlock")

func (r *redsyncLocker) unlock(hctx context.Context) error {
	ok, err := r.m.UnlockContext(context.WithoutCancel(hctx))
	if err != nil {
		return fmt.Errorf("redsync: %w", err)
	}
	if !ok {
		return errRedsyncNotHeld
	}
	return nil
}

func (r *redsyncLocker) close() error { return nil }
