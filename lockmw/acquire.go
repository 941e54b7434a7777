package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// attempt is one owner field's acquisition as the acquire script sees it.
type attempt struct {
	field    string
	fieldArg any           // field, boxed once for the scripts
	ttl      time.Duration // the lease, or the watchdog timeout
	enqueue  bool          // join the waiter queue when busy
	queued   bool          // an earlier attempt may have joined it
	lead     bool          // a campaign of Lead: the hold is a term
}

// acquireReply is the acquire script's answer.
type acquireReply struct {
	won    bool
	token  int64
	pttl   time.Duration
	holder string
	meta   string
	at     int64 // a busy reply's server time in ms (0: not told)
	split  bool  // a quorum's masters were split between contenders: pttl is a random back-off
}

// busy is the error of an attempt that found the lock held.
func (r *acquireReply) busy(name string) *BusyError {
	return &BusyError{Name: name, TTL: r.pttl, Holder: r.holder, Metadata: r.meta}
}

// parseAcquire reads acquire.lua's and semacquire.lua's reply: {1, token}
// or {0, pttl, holder, meta, server ms}.
func parseAcquire(res []any) (acquireReply, error) {
	var r acquireReply
	if len(res) >= 2 && asInt(res[0]) == 1 {
		r.won, r.token = true, asInt(res[1])
		return r, nil
	}
	if len(res) < 4 {
		return r, fmt.Errorf("unexpected reply %v", res)
	}
	r.pttl = time.Duration(asInt(res[1])) * time.Millisecond
	if r.pttl < 0 {
		r.pttl = -1
	}
	r.holder, _ = res[2].(string)
	r.meta, _ = res[3].(string)
	if len(res) >= 5 {
		r.at = asInt(res[4])
	}
	return r, nil
}

// try runs the acquire script once for a.
func (m *Mutex) try(ctx context.Context, a attempt) (acquireReply, error) {
	return m.c.store.tryAcquire(ctx, m, a)
}

// acquire runs a new acquisition: one attempt, then the wait (also after a
// first attempt that failed on a transient error: firstFailed); lead marks a
// campaign of Lead for the hooks.
func (m *Mutex) acquire(ctx context.Context, wait, lease time.Duration, ev *AcquireEndEvent, lead bool) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, errors.Join(ErrNotAcquired, err)
	}
	c := m.c
	a := attempt{field: c.id + ":" + formatUint(c.ownerSeq.Add(1)), ttl: lease, enqueue: wait > 0, lead: lead}
	a.fieldArg = a.field
	if a.ttl == 0 {
		a.ttl = c.opts.watchdog
	}
	sent := time.Now()
	r, err := m.first(ctx, a)
	if err != nil {
		if end := firstFailed(ctx, m, a.field, wait, err); end != nil {
			return ctx, end
		}
	}
	t := turn{token: r.token, base: sent}
	if !r.won {
		m.c.contention.seen(m.hot)
		if ev != nil && err == nil {
			ev.Waited, ev.Holder, ev.HolderMetadata = true, r.holder, r.meta
		}
		if wait == 0 {
			return ctx, r.busy(m.name)
		}
		wt := &waitTurn{c: c, q: m, name: m.name, k: &m.k, a: a, lease: lease, ev: ev, busy: r, answered: err == nil, lastBusy: sent, lastErr: err}
		if t, err = wt.run(ctx, wait, sent); err != nil {
			return ctx, err
		}
	}
	if err := m.syncReplicas(ctx, a.field); err != nil {
		return ctx, err
	}
	return m.startHold(ctx, a, lease, t, !r.won), nil
}

// first runs a new acquisition's first attempt, bounded by ctx (bounded.go):
// a reply that arrives after the caller gave up has the acquisition undone
// again, for it may have won after the first clean-up ran.
func (m *Mutex) first(ctx context.Context, a attempt) (acquireReply, error) {
	if !m.c.mustBound(ctx) {
		return m.c.store.acquireFirst(ctx, m, a)
	}
	return within(ctx, func(ctx context.Context) (acquireReply, error) {
		return m.c.store.acquireFirst(ctx, m, a)
	}, m.lateAcquire(a.field))
}

// lateAcquire is within's late for a round trip of field's acquisition: it
// undoes the acquisition once more.
func (m *Mutex) lateAcquire(field string) func(acquireReply, error) {
	return func(acquireReply, error) { m.abandon(field) }
}

// syncReplicas waits for WithReplicaSync's replicas, bounded by ctx.
func (m *Mutex) syncReplicas(ctx context.Context, field string) error {
	if m.c.replicas == 0 || !m.c.mustBound(ctx) {
		return m.c.store.syncReplicas(ctx, m, field)
	}
	return withinErr(ctx, func(ctx context.Context) error {
		return m.c.store.syncReplicas(ctx, m, field)
	}, func(error) { m.abandon(field) })
}

// retry is a queued waiter's next attempt (queuer), bounded by ctx.
func (m *Mutex) retry(ctx context.Context, a attempt) (acquireReply, error) {
	a.enqueue, a.queued = true, true
	if !m.c.mustBound(ctx) {
		return m.try(ctx, a)
	}
	return within(ctx, func(ctx context.Context) (acquireReply, error) {
		return m.try(ctx, a)
	}, m.lateAcquire(a.field))
}

// claim gives a lock handed to a.field its full TTL (queuer), bounded by
// ctx; a claim that succeeds after the caller gave up is undone.
func (m *Mutex) claim(ctx context.Context, a attempt) (int64, bool) {
	if !m.c.mustBound(ctx) {
		return m.c.store.claim(ctx, m, a)
	}
	type claimed struct {
		token int64
		ok    bool
	}
	r, err := within(ctx, func(ctx context.Context) (claimed, error) {
		token, ok := m.c.store.claim(ctx, m, a)
		return claimed{token, ok}, nil
	}, func(claimed, error) { m.abandon(a.field) })
	return r.token, err == nil && r.ok
}

// leave takes a waiter whose wait ran out out of the queue, keeping a lock
// handed to it just then (queuer).
func (m *Mutex) leave(ctx context.Context, a attempt) (int64, bool, error) {
	return m.leaveQueue(ctx, a.field, true, a.ttl)
}

// leaveQueue takes field out of the queue. When the lock was handed to it
// meanwhile, it keeps it (keep) and reports the token, or passes it on.
func (m *Mutex) leaveQueue(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.opts.releaseTimeout)
	defer cancel()
	return m.leaveWithin(lctx, field, keep, ttl)
}

// leaveWithin runs leave.lua for field, bounded by ctx (bounded.go); a lock
// kept after the caller gave up is undone.
func (m *Mutex) leaveWithin(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	if !m.c.mustBound(ctx) {
		return m.c.store.leave(ctx, m, field, keep, ttl)
	}
	type left struct {
		token int64
		ok    bool
	}
	r, err := within(ctx, func(ctx context.Context) (left, error) {
		token, ok, err := m.c.store.leave(ctx, m, field, keep, ttl)
		return left{token, ok}, err
	}, func(r left, _ error) {
		if r.ok { // kept a lock handed over just then: nobody will use it
			m.abandon(field)
		}
	})
	return r.token, r.ok, err
}

// abandon undoes an acquisition that failed or gave up: it takes field out
// of the queue and releases the lock if field got it after all (a reply that
// was lost, a hand-off that came as the waiter left). It runs on the
// renewer's goroutine, so that the caller returns on time even when Redis
// does not answer (queuer).
func (m *Mutex) abandon(field string) {
	m.c.renewer.abandon(m, field)
}

// fullKeys are the keys of the scripts that may hand the lock over, with
// the latch of reqID (lib.lua's layout).
func (m *Mutex) fullKeys(reqID string) []string {
	return []string{m.k.lock, m.k.channel, m.k.queue, m.k.waiters, m.k.token, m.k.latchBase + reqID, m.k.handoff}
}
