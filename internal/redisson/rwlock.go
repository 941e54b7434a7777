package redisson

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// prefixName is RedissonObject.prefixName: "prefix:{name}", or
// "prefix:name" when name already has a "{".
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixName is RedissonObject.suffixName: "{name}:suffix", or
// "name:suffix" when name already has a "{".
func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// RWChannel is the channel of the read-write lock name,
// prefixName("redisson_rwlock", name): "redisson_rwlock:{name}", or
// "redisson_rwlock:name" when name already has a "{". Its read and write
// locks share it: a read unlock publishes "0", a write unlock "1".
func RWChannel(name string) string { return prefixName("redisson_rwlock", name) }

// ReadTimeoutKey is the key carrying the lease of level n of a reader's
// hold, the reader's field being "<id>:<threadId>":
// "{name}:<field>:rwlock_timeout:<n>" (getReadWriteTimeoutNamePrefix).
func ReadTimeoutKey(name, field string, n int) string {
	return readTimeoutPrefix(name, field) + ":" + strconv.Itoa(n)
}

func readTimeoutPrefix(name, field string) string {
	return suffixName(name, field) + ":rwlock_timeout"
}

// readKeyPrefix is RedissonReadLock.getKeyPrefix: the timeout prefix up to
// ":<field>", that is "{name}" (or name), the prefix the unlock and renewal
// scripts put before every reader's field.
func readKeyPrefix(timeoutPrefix, field string) string {
	before, _, _ := strings.Cut(timeoutPrefix, ":"+field)
	return before
}

// ReadWriteLock is one process's handle on one read-write lock name
// (RedissonReadWriteLock). Its read side is shared by readers, its write
// side held by one thread; both are reentrant, and the writing thread may
// take the read side too.
type ReadWriteLock struct {
	c    *Client
	name string
}

// GetReadWriteLock returns the process's handle on the read-write lock name
// (getReadWriteLock).
func (c *Client) GetReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// ReadLock returns a new handle on the read side (readLock(), which makes a
// new RedissonReadLock each call: each handle has its own lease).
func (rw *ReadWriteLock) ReadLock() *ReadLock {
	r := &ReadLock{side: side{c: rw.c, name: rw.name}}
	r.leaseTime.Store(int64(rw.c.watchdog))
	return r
}

// WriteLock returns a new handle on the write side (writeLock(), a new
// RedissonWriteLock each call).
func (rw *ReadWriteLock) WriteLock() *WriteLock {
	w := &WriteLock{side: side{c: rw.c, name: rw.name}}
	w.leaseTime.Store(int64(rw.c.watchdog))
	return w
}

// side is what RedissonReadLock and RedissonWriteLock inherit from
// RedissonLock: the name, the channel and the handle's lease.
type side struct {
	c    *Client
	name string
	// leaseTime is internalLockLeaseTime, as in [Lock]: the last lease
	// given through this handle, or the Client's watchdog timeout. A write
	// unlock that leaves levels sets it as the TTL.
	leaseTime atomic.Int64
}

func (s *side) channel() string { return RWChannel(s.name) }

// field is getLockName of RedissonBaseLock: "<id>:<threadId>", a reader's
// field; the writer's adds ":write".
func (s *side) field(threadID int64) string {
	return s.c.id + ":" + strconv.FormatInt(threadID, 10)
}

// lease is the lease an attempt sends: leaseTime, or the handle's when
// leaseTime ≤ 0.
func (s *side) lease(leaseTime time.Duration) time.Duration {
	if leaseTime > 0 {
		return leaseTime
	}
	return time.Duration(s.leaseTime.Load())
}

// attempted is tryAcquireAsync's ending for an answer v: an acquisition
// with a lease makes it the handle's; one without is handed to the
// watchdog (scheduleExpirationRenewal, which renew runs).
func (s *side) attempted(v int64, err error, leaseTime time.Duration, renew func()) (bool, time.Duration, error) {
	if !errors.Is(err, redis.Nil) {
		return false, time.Duration(v) * time.Millisecond, err
	}
	if leaseTime > 0 {
		s.leaseTime.Store(int64(leaseTime))
	} else {
		renew()
	}
	return true, 0, nil
}

// cancelRenewal is RedissonLock.cancelExpirationRenewal: the thread's write
// hold leaves the watchdog (one acquisition's worth, as each acquisition
// added one), and the handle's lease goes back to the watchdog timeout
// when the unlock released the lock or did not find it held.
func (s *side) cancelRenewal(threadID int64, released bool) {
	s.c.renewal.lock.cancel(s.name, threadID)
	if released {
		s.leaseTime.Store(int64(s.c.watchdog))
	}
}

// unlock runs an unlock script through the shared unlock (unlockAsync0),
// with a new request's latch key.
func (s *side) unlock(ctx context.Context, script *redis.Script, keys func(latch string) []string, args []any, cancel func(released bool)) error {
	latch := LatchKey(s.name, uuid.NewString())
	return s.c.unlock(ctx, latch, func() (int64, error) {
		return script.Run(ctx, s.c.rdb, keys(latch), args...).Int64()
	}, cancel)
}

// ReadLock is a handle on a read-write lock's read side (RedissonReadLock).
type ReadLock struct{ side }

func (r *ReadLock) tryAcquire(ctx context.Context, threadID int64, leaseTime time.Duration) (bool, time.Duration, error) {
	field := r.field(threadID)
	prefix := readTimeoutPrefix(r.name, field)
	v, err := readAcquireScript.Run(ctx, r.c.rdb, []string{r.name, prefix},
		r.lease(leaseTime).Milliseconds(), field, field+":write").Int64()
	return r.attempted(v, err, leaseTime, func() {
		r.c.renewal.read.add(r.name, threadID, field, readKeyPrefix(prefix, field))
	})
}

// Lock waits until the thread holds a read level, or ctx ends
// (lock(leaseTime, unit, interruptibly)). leaseTime ≤ 0 takes the Client's
// watchdog timeout, renewed until Unlock. It waits as [Lock.Lock] does, on
// the channel RWChannel(name).
func (r *ReadLock) Lock(ctx context.Context, threadID int64, leaseTime time.Duration) error {
	return r.c.lock(ctx, r, threadID, leaseTime)
}

// TryLock tries to take a read level within waitTime, as [Lock.TryLock]
// does, and reports whether it did.
func (r *ReadLock) TryLock(ctx context.Context, threadID int64, waitTime, leaseTime time.Duration) (bool, error) {
	return r.c.tryLock(ctx, r, threadID, waitTime, leaseTime)
}

// Unlock releases one read level of the thread's hold: the last reader's
// publishes "0" on RWChannel(name). It returns ErrNotHeld when the thread
// holds no read level, and also when the lock is gone, after publishing
// "0" (as Redisson's unlock script does).
func (r *ReadLock) Unlock(ctx context.Context, threadID int64) error {
	field := r.field(threadID)
	prefix := readTimeoutPrefix(r.name, field)
	keys := func(latch string) []string {
		return []string{r.name, r.channel(), prefix, readKeyPrefix(prefix, field), latch}
	}
	args := []any{unlockMessage, field, r.c.publishCmd(), unlockLatchTTL.Milliseconds()}
	return r.unlock(ctx, readUnlockScript, keys, args, func(released bool) {
		// RedissonReadLock.cancelExpirationRenewal: RedissonLock's (which
		// takes one count off the thread's write hold's renewal too), then
		// the read renewal's.
		r.cancelRenewal(threadID, released)
		r.c.renewal.read.cancel(r.name, threadID)
	})
}

// WriteLock is a handle on a read-write lock's write side
// (RedissonWriteLock).
type WriteLock struct{ side }

// field is RedissonWriteLock.getLockName: "<id>:<threadId>:write".
func (w *WriteLock) field(threadID int64) string { return w.side.field(threadID) + ":write" }

func (w *WriteLock) tryAcquire(ctx context.Context, threadID int64, leaseTime time.Duration) (bool, time.Duration, error) {
	field := w.field(threadID)
	v, err := writeAcquireScript.Run(ctx, w.c.rdb, []string{w.name},
		w.lease(leaseTime).Milliseconds(), field).Int64()
	return w.attempted(v, err, leaseTime, func() {
		w.c.renewal.lock.add(w.name, threadID, field, "")
	})
}

// Lock waits until the thread holds a write level, or ctx ends, as
// [ReadLock.Lock] does. A thread holding only the read side waits for ever
// (until ctx ends): Redisson does not upgrade.
func (w *WriteLock) Lock(ctx context.Context, threadID int64, leaseTime time.Duration) error {
	return w.c.lock(ctx, w, threadID, leaseTime)
}

// TryLock tries to take a write level within waitTime, as [Lock.TryLock]
// does, and reports whether it did.
func (w *WriteLock) TryLock(ctx context.Context, threadID int64, waitTime, leaseTime time.Duration) (bool, error) {
	return w.c.tryLock(ctx, w, threadID, waitTime, leaseTime)
}

// Unlock releases one write level of the thread's hold. The last level
// deletes the lock and publishes "1" on RWChannel(name), unless the thread
// also holds the read side: then the mode becomes "read", and nothing is
// published. It returns ErrNotHeld when the thread holds no write level,
// and also when the lock is gone, after publishing "1".
func (w *WriteLock) Unlock(ctx context.Context, threadID int64) error {
	keys := func(latch string) []string { return []string{w.name, w.channel(), latch} }
	args := []any{readUnlockMessage, w.leaseTime.Load() / int64(time.Millisecond),
		w.field(threadID), w.c.publishCmd(), unlockLatchTTL.Milliseconds()}
	return w.unlock(ctx, writeUnlockScript, keys, args, func(released bool) {
		w.cancelRenewal(threadID, released)
	})
}
