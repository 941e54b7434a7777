package redisson

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrPermitNotHeld is returned by [Semaphore.Release] when the permit is not
// in the semaphore's zset, or had expired (Redisson's
// IllegalArgumentException "Permit with id … has already been released or
// doesn't exist").
var ErrPermitNotHeld = errors.New("redisson: permit has already been released or doesn't exist")

// NoLeaseScore is the expiry score of a permit taken without a lease
// (RedissonPermitExpirableSemaphore.nonExpirableTimeout): far beyond any
// clock, and never reported to a waiter as the earliest expiry.
const NoLeaseScore int64 = 922337203685477

// SemaphoreChannel is the channel of the semaphore name,
// prefixName("redisson_sc", name): "redisson_sc:{name}", or
// "redisson_sc:name" when name already has a hash tag.
func SemaphoreChannel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_sc:" + name
	}
	return "redisson_sc:{" + name + "}"
}

// SemaphoreTimeoutKey is the zset of the semaphore name's permits,
// suffixName(name, "timeout"): "{name}:timeout", or "name:timeout" when
// name already has a hash tag.
func SemaphoreTimeoutKey(name string) string {
	if strings.Contains(name, "{") {
		return name + ":timeout"
	}
	return "{" + name + "}:timeout"
}

// Semaphore is one process's handle on one semaphore name
// (RedissonPermitExpirableSemaphore), taken one permit at a time. Each
// permit has its own id, returned by Acquire and TryAcquire and given back
// to Release.
type Semaphore struct {
	c    *Client
	name string
}

// GetPermitExpirableSemaphore returns the process's handle on the
// semaphore name (getPermitExpirableSemaphore).
func (c *Client) GetPermitExpirableSemaphore(name string) *Semaphore {
	return &Semaphore{c: c, name: name}
}

func (s *Semaphore) channel() string { return SemaphoreChannel(s.name) }

// nowMillis is System.currentTimeMillis(): the clock of every score.
func nowMillis() int64 { return time.Now().UnixMilli() }

// TrySetPermits sets the number of permits when the semaphore has none set
// yet, and publishes it on the channel, so that waiting threads retry
// (trySetPermits). It reports whether it set them.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	n, err := semTrySetScript.Run(ctx, s.c.rdb, []string{s.name, s.channel()},
		permits, s.c.publishCmd()).Int64()
	return n == 1, err
}

// AvailablePermits reclaims the expired permits (publishing the new count
// when positive) and returns the permits left to take (availablePermits).
func (s *Semaphore) AvailablePermits(ctx context.Context) (int, error) {
	keys := []string{s.name, SemaphoreTimeoutKey(s.name), s.channel()}
	return semAvailableScript.Run(ctx, s.c.rdb, keys, nowMillis(), s.c.publishCmd()).Int()
}

// TryRelease gives the permit back and publishes the new count on the
// channel (tryRelease). It reports false when the permit was not held, and
// also — as Redisson does — when it had expired but not yet been reclaimed,
// though it was given back then.
func (s *Semaphore) TryRelease(ctx context.Context, permitID string) (bool, error) {
	id, err := hex.DecodeString(permitID)
	if err != nil {
		return false, fmt.Errorf("redisson: permit id %q: %w", permitID, err)
	}
	keys := []string{s.name, s.channel(), SemaphoreTimeoutKey(s.name)}
	n, err := semReleaseScript.Run(ctx, s.c.rdb, keys,
		string(id), 1, nowMillis(), s.c.publishCmd()).Int64()
	return n == 1, err
}

// Release is TryRelease that returns ErrPermitNotHeld instead of false
// (release).
func (s *Semaphore) Release(ctx context.Context, permitID string) error {
	ok, err := s.TryRelease(ctx, permitID)
	if err == nil && !ok {
		err = fmt.Errorf("%w: id %s", ErrPermitNotHeld, permitID)
	}
	return err
}

// attempt is what one acquire script answered: the permit's id when taken,
// else the earliest expiry score of a permit held with a lease (0 when none
// is), in milliseconds of the client's clock.
type attempt struct {
	id       string
	earliest int64
}

// untilEarliest is how long a waiter sleeps on the latch before trying
// again: until the earliest expiry, never negative (a Java Semaphore's
// tryAcquire with a timeout ≤ 0 does not wait), or -1 — until a message —
// when no permit held has a lease.
func (a attempt) untilEarliest() time.Duration {
	if a.earliest == 0 {
		return -1
	}
	return time.Duration(max(0, a.earliest-nowMillis())) * time.Millisecond
}

// tryAcquire runs the acquire script once for one new permit id
// (tryAcquire(permits, leaseTime, unit)). A negative leaseTime is Redisson's
// -1: no lease.
func (s *Semaphore) tryAcquire(ctx context.Context, leaseTime time.Duration) (attempt, error) {
	raw := make([]byte, 16) // ServiceManager.generateId: 16 random bytes
	_, _ = rand.Read(raw)   // never fails (crypto/rand)
	expiry := NoLeaseScore  // calcTimeout
	if leaseTime >= 0 {
		expiry = nowMillis() + leaseTime.Milliseconds()
	}
	keys := []string{s.name, SemaphoreTimeoutKey(s.name), s.channel()}
	res, err := semAcquireScript.Run(ctx, s.c.rdb, keys,
		1, expiry, nowMillis(), NoLeaseScore, s.c.publishCmd(), string(raw)).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return attempt{}, nil
	case err != nil:
		return attempt{}, err
	case res == "OK":
		return attempt{id: hex.EncodeToString(raw)}, nil
	}
	score, err := strconv.ParseInt(strings.TrimPrefix(res, ":"), 10, 64) // Long.parseLong
	if err != nil || !strings.HasPrefix(res, ":") {
		return attempt{}, fmt.Errorf("redisson: unexpected answer %q of the semaphore's acquire script", res)
	}
	return attempt{earliest: score}, nil
}

// semaphoreMessage is SemaphorePubSub.onMessage: a message n (a count of
// permits, read as a Long) releases min(threads subscribed, n) latch
// permits. A message that is no number is dropped, as LongCodec's failure
// drops it; n ≤ 0 releases none (Java's release(negative) throws in the
// listener).
func (c *Client) semaphoreMessage(e *entry, payload string) {
	n, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	n = min(n, int64(e.threads))
	c.mu.Unlock()
	for range n {
		e.latch.release()
	}
}
