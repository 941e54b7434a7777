package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// setnxLock is the floor: the cheapest lock there is, and an unsafe one.
// lock sends SET key token NX PX ttl and, while the key is taken, sleeps
// 1 ms and sends it again; unlock sends DEL, without checking that the key
// still holds its token (a holder whose lease ran out deletes the next
// owner's lock). No lock that releases safely can do less work. rdb is a
// go-redis client, or its AutoPipeliner (the auto-pipelined floor).
type setnxLock struct {
	rdb redis.Cmdable
	key string
}

// setnxToken is the value every setnx owner writes: nothing reads it.
const setnxToken = "setnx"

func newSetNXLock(rdb redis.Cmdable, key string) *setnxLock {
	return &setnxLock{rdb: rdb, key: key}
}

func (s *setnxLock) lock(ctx context.Context) (context.Context, error) {
	for {
		ok, err := s.rdb.SetNX(ctx, s.key, setnxToken, pollTTL).Result()
		if err != nil || ok {
			return ctx, err
		}
		select {
		case <-time.After(peerRetry):
		case <-ctx.Done():
			return ctx, ctx.Err()
		}
	}
}

func (s *setnxLock) unlock(hctx context.Context) error {
	return s.rdb.Del(context.WithoutCancel(hctx), s.key).Err()
}

func (s *setnxLock) close() error { return nil }
