package lockmw

import (
	"context"
	"fmt"
	"time"
)

// attempt is one owner field's acquisition as the acquire script sees it.
type attempt struct {
	field    string
	fieldArg any           // field, boxed once for the scripts
	h        *hold         // the hold a new acquisition makes when it wins (it keeps field); nil: startHold makes one
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
	metas  []string  // a semaphore's or read-write lock's holders' metadata (semacquire.lua, rwacquire.lua)
	at     int64     // a busy reply's server time in µs (0: not told)
	split  bool      // a quorum's masters were split between contenders: pttl is a random back-off
	lk     *lockBase // a won reply's lock when not the kind's own: a quorum semaphore's permit, a quorum read-write side's (lockBase.of)
}

// busy is the error of an attempt that found the lock held.
func (r *acquireReply) busy(name string) *BusyError {
	return &BusyError{Name: name, TTL: r.pttl, Holder: r.holder, Metadata: r.meta, metas: r.metas}
}

// parseAcquire reads acquire.lua's and semacquire.lua's reply: {1, token}
// or {0, pttl, holder, meta, server µs[, holders' metas]}.
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
	if len(res) >= 6 {
		if ms, ok := res[5].([]any); ok && len(ms) > 0 {
			r.metas = make([]string, 0, len(ms))
			for _, m := range ms {
				if s, ok := m.(string); ok {
					r.metas = append(r.metas, s)
				}
			}
		}
	}
	return r, nil
}

// The mutex's operations for the engine (kindOps), through the Client's
// store: one Redis or a quorum.

// firstTry is a new acquisition's first attempt: the fast path may take it.
func (m *Mutex) firstTry(ctx context.Context, a attempt) (acquireReply, error) {
	return m.c.store.acquireFirst(ctx, m, a)
}

// try runs the acquire script once for a.
func (m *Mutex) try(ctx context.Context, a attempt) (acquireReply, error) {
	return m.c.store.tryAcquire(ctx, m, a)
}

// claimOnce runs claim.lua.
func (m *Mutex) claimOnce(ctx context.Context, a attempt) (int64, bool) {
	return m.c.store.claim(ctx, m, a)
}

// leaveOnce runs leave.lua.
func (m *Mutex) leaveOnce(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	return m.c.store.leave(ctx, m, field, keep, ttl)
}

// fullKeys are the keys of the scripts that may hand the lock over, with
// the latch of reqID (lib.lua's layout).
func (m *Mutex) fullKeys(reqID string) []string {
	return []string{m.k.lock, m.k.channel, m.k.queue, m.k.waiters, m.k.token, m.k.latchBase + reqID, m.k.handoff}
}
