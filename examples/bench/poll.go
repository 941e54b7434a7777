package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// pollLock is the polling design of redsync and bsm/redislock, written here
// as a baseline: SET key token NX PX ttl; when busy, sleep a random
// interval in [min, max] and try again; release by deleting the key only if
// it still holds our token. It has no watchdog: ttl only bounds a crash.
type pollLock struct {
	rdb      redis.UniversalClient
	key      string
	ttl      time.Duration
	min, max time.Duration
	id       string
	seq      atomic.Uint64
}

// pollTTL is the lease of the TTL-only locks (poll, setnx, redislock); the
// benchmark holds them far shorter.
const pollTTL = 30 * time.Second

var pollRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

type pollTokenKey struct{}

var pollIDs atomic.Uint64

func newPollLock(rdb redis.UniversalClient, key string, lo, hi time.Duration) *pollLock {
	return &pollLock{rdb: rdb, key: key, ttl: pollTTL, min: lo, max: hi,
		id: "poll-" + strconv.FormatUint(pollIDs.Add(1), 10) + "-" + strconv.FormatUint(rand.Uint64(), 36)}
}

func (p *pollLock) lock(ctx context.Context) (context.Context, error) {
	token := p.id + ":" + strconv.FormatUint(p.seq.Add(1), 10)
	var t *time.Timer
	for {
		ok, err := p.rdb.SetNX(ctx, p.key, token, p.ttl).Result()
		if err != nil {
			return ctx, err
		}
		if ok {
			return context.WithValue(ctx, pollTokenKey{}, token), nil
		}
		d := p.min
		if p.max > p.min {
			d += rand.N(p.max - p.min + 1)
		}
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx, ctx.Err()
		}
	}
}

var errPollNotHeld = errors.New("poll lock: not held")

func (p *pollLock) unlock(hctx context.Context) error {
	token, _ := hctx.Value(pollTokenKey{}).(string)
	if token == "" {
		return errPollNotHeld
	}
	n, err := pollRelease.Run(context.WithoutCancel(hctx), p.rdb, []string{p.key}, token).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errPollNotHeld
	}
	return nil
}

func (p *pollLock) close() error { return nil }
