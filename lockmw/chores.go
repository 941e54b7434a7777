package lockmw

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// chores are the background tasks the renewer runs between renewals, each
// queued by the code that needs it and run on the renewer's goroutine so
// that no caller waits on Redis for them:
//
//   - undo: take back an acquisition that did not complete (it left the
//     queue, or a reply was lost: abandon) or a re-entry whose reply was
//     lost (undoReentry), retried at each tick while a late request of it
//     may still run;
//   - claim: give a hold that was handed over with a short claim window its
//     full TTL (claimSoon, when a third of the window has passed: see
//     hold.watch);
//   - meta: write the Metadata hook's string into new holds (setMeta);
//   - sweep: drop pub/sub subscriptions idle for an interval (every tick).
type chores struct {
	undos   []undo           // abandoned acquisitions and re-entries to undo
	claims  []*hold          // holds handed over, to renew (claim) now
	metas   map[*hold]string // metadata to write
	stopped bool             // the goroutine has ended: undo on the caller's goroutine
}

// leaver is what the renewer undoes an abandoned acquisition with (a
// kind's engine): leaveWithin takes field out of the queue and gives back
// (or keeps) a lock or permit handed to it, bounded by ctx.
type leaver interface {
	leaveWithin(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error)
}

// reentryUndoer is what the renewer undoes a re-entry with (a Mutex, a side
// of an RWMutex): undoReentryOnce takes back, or forbids, the re-entry of
// reqID, bounded by ctx.
type reentryUndoer interface {
	base() *lockBase
	undoReentryOnce(ctx context.Context, field, reqID string) error
}

// undo is one undo chore.
type undo struct {
	l     leaver        // an acquisition's lock
	m     reentryUndoer // a re-entry's lock
	field string
	reqID string    // a re-entry to undo; "" for an acquisition
	until time.Time // retried at each renewer tick until then
	after uint64    // the batcher's round trips begun when it was queued (batch.go)
}

// undoReentry queues the undoing of a re-entry whose reply was lost.
func (r *renewer) undoReentry(m reentryUndoer, field, reqID string) {
	r.queueUndo(undo{m: m, field: field, reqID: reqID})
}

// abandon queues the clean-up of an acquisition that did not complete.
func (r *renewer) abandon(l leaver, field string) {
	r.queueUndo(undo{l: l, field: field})
}

// queueUndo queues u, or runs it now when the renewer has stopped.
func (r *renewer) queueUndo(u undo) {
	// As long as a late request may still run: the latch's life.
	u.until = time.Now().Add(time.Duration(r.c.latchMS) * time.Millisecond)
	u.after = r.c.batch.begun()
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		u.run(context.Background())
		return
	}
	r.undos = append(r.undos, u)
	r.mu.Unlock()
	r.wake()
}

// runUndos runs the queued undo chores; stop says the renewer is stopping.
func (r *renewer) runUndos(stop bool) {
	r.mu.Lock()
	us := r.undos
	r.undos = nil
	r.stopped = r.stopped || stop
	r.mu.Unlock()
	// Bounded by a renewal interval so that renewals are not held up.
	us = r.deferUndos(us, stop)
	ctx, cancel := context.WithTimeout(context.Background(), min(r.c.opts.releaseTimeout, r.c.opts.watchdog/3))
	defer cancel()
	var again []undo
	for _, u := range us {
		if err := u.run(ctx); err != nil && !stop && time.Now().Before(u.until) {
			again = append(again, u)
		}
	}
	if len(again) > 0 { // at the next tick
		r.mu.Lock()
		r.undos = append(r.undos, again...)
		r.mu.Unlock()
	}
}

// deferUndos returns the undos of us that may run now, and queues again
// those that must wait for the batcher's round trips begun before them
// (an undo must not overtake what it undoes, batch.go): the batcher wakes
// the renewer when they have ended.
func (r *renewer) deferUndos(us []undo, stop bool) []undo {
	if stop || r.c.batch == nil {
		return us
	}
	now, later := us[:0:0], []undo(nil)
	for _, u := range us {
		if r.c.batch.settled(u.after) {
			now = append(now, u)
		} else {
			later = append(later, u)
		}
	}
	if len(later) > 0 {
		r.mu.Lock()
		r.undos = append(later, r.undos...)
		r.mu.Unlock()
	}
	return now
}

// run undoes u once.
func (u undo) run(ctx context.Context) error {
	if u.reqID == "" { // within runUndos's bound, so that renewals are not held up
		_, _, err := u.l.leaveWithin(ctx, u.field, false, 0)
		return err
	}
	m, c := u.m, u.m.base().c
	ctx, cancel := context.WithTimeout(ctx, c.opts.releaseTimeout)
	defer cancel()
	err := withinErr(ctx, func(ctx context.Context) error {
		return m.undoReentryOnce(ctx, u.field, u.reqID)
	}, nil)
	if err != nil {
		c.log.Warn("lockmw: undoing a re-entry failed", "name", m.base().name, "err", err)
	}
	return err
}

// claimSoon renews h now: it was handed over with a short claim window.
func (r *renewer) claimSoon(h *hold) {
	r.mu.Lock()
	r.claims = append(r.claims, h)
	r.mu.Unlock()
	r.wake()
}

// claimPending renews the holds handed over since the last call.
func (r *renewer) claimPending() {
	r.mu.Lock()
	hs := make([]*hold, 0, len(r.claims))
	for _, h := range r.claims {
		if _, ok := r.holds[h]; ok {
			hs = append(hs, h)
		}
	}
	r.claims = r.claims[:0]
	r.mu.Unlock()
	r.renewHolds(hs)
}

// setMeta queues the writing of h's metadata s.
func (r *renewer) setMeta(h *hold, s string) {
	r.mu.Lock()
	r.metas[h] = s
	r.mu.Unlock()
	r.wake()
}

// writeMetas writes the metadata of new holds, conditioned on still holding.
func (r *renewer) writeMetas() {
	c := r.c
	r.mu.Lock()
	metas := r.metas
	r.metas = make(map[*hold]string)
	r.mu.Unlock()
	if len(metas) == 0 {
		return
	}
	hs := make([]*hold, 0, len(metas))
	for h := range metas {
		hs = append(hs, h)
	}
	batches := r.batchesOf(hs)
	calls := make([]scripts.Call, len(batches))
	for i, b := range batches {
		keys := make([]string, 0, 2*len(b))
		args := make([]any, 0, 3*len(b))
		for _, h := range b {
			switch h.lk.kind {
			case kindMutex:
				keys = append(keys, h.lk.renewKey, h.lk.renewKey)
				args = append(args, "m", h.field, metas[h])
			case kindSemaphore:
				keys = append(keys, h.lk.renewKey, h.lk.k.meta)
				args = append(args, "s", h.field, metas[h])
			default: // a side of an RWMutex: its field in Redisson's hash
				keys = append(keys, h.lk.renewKey, h.lk.k.meta)
				args = append(args, "r", h.field+h.lk.suffix, metas[h])
			}
		}
		calls[i] = scripts.Call{Keys: keys, Args: args}
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, c.opts.releaseTimeout)
	defer cancel()
	for _, cmds := range c.store.runBatches(ctx, scripts.SetMeta, calls) {
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				c.log.Warn("lockmw: storing hold metadata failed", "err", err)
			}
		}
	}
}

// sweepHubs drops idle subscriptions and stale pending hand-offs, each hub
// on a goroutine of its own, one sweep at a time: a hub's lock may be held
// while a connection to a paused server is dialled (a read timeout, and
// go-redis's dial retries), which must not hold up renewals.
func (r *renewer) sweepHubs() {
	if r.sweeping == nil {
		r.sweeping = make([]atomic.Bool, len(r.c.hubs))
	}
	for i, h := range r.c.hubs {
		if r.sweeping[i].CompareAndSwap(false, true) {
			go func() {
				defer r.sweeping[i].Store(false)
				h.sweep()
			}()
		}
	}
}
