package lockmw

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	ok, err := query(ctx, m, func(ctx context.Context) (bool, error) { return m.c.store.isLocked(ctx, m) })
	return ok, withCtxErr(ctx, err)
}

// IsHeld reports whether the owner carried by the hold context hold holds
// the lock in Redis; false when hold carries no hold of it. hold also bounds
// the query.
func (m *Mutex) IsHeld(hold context.Context) (bool, error) {
	n, err := m.HoldCount(hold)
	return n > 0, err
}

// HoldCount returns how many levels the owner carried by the hold context
// hold holds, as Redis counts them; 0 when hold carries no hold of the lock.
// hold also bounds the query.
func (m *Mutex) HoldCount(hold context.Context) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	lvl := m.findLevel(hold)
	if lvl == nil {
		return 0, nil
	}
	field := lvl.h.field
	n, err := query(hold, m, func(ctx context.Context) (int, error) { return m.c.store.holdCount(ctx, m, field) })
	return n, withCtxErr(hold, err)
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
	return bounded(m.c, ctx, f, nil)
}

// Holder describes who holds a lock now.
type Holder struct {
	// Field is the holder's hash field, "<clientID>:<ownerID>" (a Redisson
	// holder's is "<uuid>:<threadID>").
	Field string
	// Metadata is the string a Metadata hook stored with the hold; "" when
	// none.
	Metadata string
	// TTL is the lock's remaining time to live; -1 when it has no expiry.
	TTL time.Duration
}

// Holder reports who holds the lock, without taking part (an observer of
// Lead asks who leads): false when nobody does. On a quorum client it reads
// the first master.
func (m *Mutex) Holder(ctx context.Context) (Holder, bool, error) {
	if m.err != nil {
		return Holder{}, false, m.err
	}
	type found struct {
		h  Holder
		ok bool
	}
	f, err := query(ctx, m, func(ctx context.Context) (found, error) {
		fields, ttl := backend.NewCmd("hgetall", m.k.lock), backend.NewCmd("pttl", m.k.lock)
		if err := m.c.store.nodes()[0].Pipeline(ctx, []*backend.Cmd{fields, ttl}); err != nil {
			return found{}, err
		}
		kv, err := fields.Slice()
		if err != nil {
			return found{}, err
		}
		var h Holder
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			v, _ := kv[i+1].(string)
			switch {
			case k == "rlock:meta":
				h.Metadata = v
			case len(k) < 6 || k[:6] != "rlock:":
				h.Field = k
			}
		}
		if h.Field == "" {
			return found{}, nil
		}
		h.TTL, _ = msDuration(ttl.Int64())
		if h.TTL < 0 {
			h.TTL = -1
		}
		return found{h, true}, nil
	})
	return f.h, f.ok, withCtxErr(ctx, err)
}
