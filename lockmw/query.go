package lockmw

import (
	"context"
	"time"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	ok, err := query(ctx, m, func(ctx context.Context) (bool, error) { return m.c.store.isLocked(ctx, m) })
	return ok, withCtxErr(ctx, err)
}

// IsHeld reports whether the owner carried by ctx holds the lock in Redis;
// false when ctx carries no hold of it.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many levels the owner carried by ctx holds, as Redis
// counts them; 0 when ctx carries no hold of the lock.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	lvl := m.findLevel(ctx)
	if lvl == nil {
		return 0, nil
	}
	field := lvl.h.field
	n, err := query(ctx, m, func(ctx context.Context) (int, error) { return m.c.store.holdCount(ctx, m, field) })
	return n, withCtxErr(ctx, err)
}

// TTL returns the lock's remaining time to live: 0 when it is not locked, -1
// when the key has no expiry (set by a foreign client).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if m.err != nil {
		return 0, m.err
	}
	d, err := query(ctx, m, func(ctx context.Context) (time.Duration, error) { return m.c.store.pttl(ctx, m) })
	return d, withCtxErr(ctx, err)
}

// query runs a read, bounded by ctx (bounded.go).
func query[T any](ctx context.Context, m *Mutex, f func(context.Context) (T, error)) (T, error) {
	if !m.c.mustBound(ctx) {
		return f(ctx)
	}
	return within(ctx, f, nil)
}
