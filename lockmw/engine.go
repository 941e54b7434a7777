package lockmw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// The engine: one acquisition, wait, hold and hand-off for every lock kind.
//
// A kind (Mutex, Semaphore) supplies its keys and its scripts (kindOps),
// each run once and unbounded. The engine does the rest once for all of
// them: it checks the call, brackets it with the hooks, bounds every round
// trip by the caller's context (bounded.go), undoes what a caller gave up on
// (the renewer's chores), queues and waits (waitqueue.go), waits for
// replicas (replicas.go) and starts the hold (hold.go), which the watchdog
// renews (renewer.go).
//
// A new kind is one Go file (its handle, its kindOps) and its Lua, which
// uses lib.lua's queue and hand-off: a read-write lock's sides are kinds
// whose scripts decide who may hold beside whom and whom a release wakes.

// kindOps is what a lock kind gives the engine: its scripts, each run once,
// unbounded (the engine bounds them and undoes what nobody will use).
type kindOps interface {
	// firstTry runs a new acquisition's first attempt: the kind's fast
	// path when it has one, else try.
	firstTry(ctx context.Context, a attempt) (acquireReply, error)
	// try runs one attempt of a; a.enqueue joins the queue when busy.
	try(ctx context.Context, a attempt) (acquireReply, error)
	// claimOnce gives what was handed to a.field its full TTL: the token,
	// false when the claim window passed or Redis failed.
	claimOnce(ctx context.Context, a attempt) (int64, bool)
	// leaveOnce takes field out of the queue. What was handed to it
	// meanwhile is kept (keep: with ttl; the token and true) or passed on.
	leaveOnce(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error)
	// reenter adds a level to the hold of outer, the caller's own of this
	// lock (findLevel). A kind that is not reentrant never finds one.
	reenter(ctx context.Context, outer *level) (context.Context, error)
	// releaseOnce releases lvl, the owner's last level when last; with
	// expireMS > 0 a last level is left to expire in that many ms.
	releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error)
}

// engine runs a kind's acquisitions; it is the kind's queuer and leaver.
type engine struct {
	*lockBase
	ops kindOps
}

// tryLock is TryLock of every kind: checks, then a re-entry or a new
// acquisition (lead: a campaign of Lead), reported to the hooks when set.
// A refusal of the Redis user's permissions is an ErrNoPermission.
func (e engine) tryLock(ctx context.Context, wait, lease time.Duration, lead bool) (context.Context, error) {
	hctx, err := e.tryLockChecked(ctx, wait, lease, lead)
	return hctx, e.permissionErr(err)
}

// tryLockChecked is tryLock's work.
func (e engine) tryLockChecked(ctx context.Context, wait, lease time.Duration, lead bool) (context.Context, error) {
	if wait < 0 {
		return ctx, fmt.Errorf("%w: negative wait %v", ErrInvalidArgument, wait)
	}
	if lease < 0 {
		return ctx, fmt.Errorf("%w: negative lease %v", ErrInvalidArgument, lease)
	}
	if e.c.isClosed() {
		return ctx, ErrClosed
	}
	lease = min(lease, time.Duration(maxTTLms)*time.Millisecond) // "forever" is 100 years
	var outer *level
	if e.reentrant() {
		outer = e.findLevel(ctx)
		if outer == nil && e.writer != nil { // a writer takes the read side
			outer = e.writer.findLevel(ctx)
		}
	}
	if hooks := &e.c.opts.hooks; hooks.AcquireStart != nil || hooks.AcquireEnd != nil {
		return e.tryLockHooked(ctx, outer, wait, lease, lead)
	}
	if outer != nil {
		return e.ops.reenter(ctx, outer)
	}
	return e.acquire(ctx, wait, lease, nil, lead)
}

// tryLockHooked is tryLock's work between the AcquireStart and AcquireEnd
// hooks.
func (e engine) tryLockHooked(ctx context.Context, outer *level, wait, lease time.Duration, lead bool) (context.Context, error) {
	hooks := &e.c.opts.hooks
	start := time.Now()
	actx := ctx
	if hooks.AcquireStart != nil {
		ev := AcquireStartEvent{LockInfo: e.info(), Reentrant: outer != nil, Wait: wait, Lease: lease, Lead: lead}
		if x := hooks.AcquireStart(ctx, ev); x != nil {
			actx = x
		}
	}
	ev := AcquireEndEvent{LockInfo: e.info(), Reentrant: outer != nil, Lead: lead}
	var hctx context.Context
	var err error
	if outer != nil {
		hctx, err = e.ops.reenter(ctx, outer)
	} else {
		hctx, err = e.acquire(ctx, wait, lease, &ev, lead)
	}
	if hooks.AcquireEnd != nil {
		ev.Duration, ev.Err, ev.Outcome = time.Since(start), err, outcomeOf(err)
		if lvl := e.findLevel(hctx); err == nil && lvl != nil {
			ev.Token = lvl.h.token
		}
		hooks.AcquireEnd(actx, ev)
	}
	return hctx, err
}

// outcomeOf classifies an acquisition's error for the hooks.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeAcquired
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		return OutcomeCanceled
	case errors.Is(err, ErrNotAcquired), errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimedOut
	default:
		return OutcomeFailed
	}
}

// acquire runs a new acquisition: one attempt, then the wait (also after a
// first attempt that failed on a transient error: firstFailed), the
// replicas, the hold.
func (e engine) acquire(ctx context.Context, wait, lease time.Duration, ev *AcquireEndEvent, lead bool) (context.Context, error) {
	if ctx.Err() != nil {
		return ctx, errors.Join(ErrNotAcquired, ctxErr(ctx))
	}
	c := e.c
	h := e.newHold()
	a := attempt{field: h.field, fieldArg: argOf(&h.field), h: h, ttl: lease, enqueue: wait > 0, lead: lead}
	if a.ttl == 0 {
		a.ttl = c.opts.watchdog
	}
	sent := time.Now()
	var r acquireReply
	var err error
	if c.mustBound(ctx) {
		r, err = within(ctx, func(ctx context.Context) (acquireReply, error) {
			return e.ops.firstTry(ctx, a)
		}, e.lateAcquire(a.field))
	} else { // the hot path: bounded without its closures
		r, err = e.ops.firstTry(ctx, a)
	}
	if err != nil {
		if end := firstFailed(ctx, e, a.field, wait, err); end != nil {
			return ctx, end
		}
	}
	t := turn{token: r.token, base: sent, lk: r.lk}
	if !r.won {
		if e.hot != nil && err == nil { // busy; a failed attempt tells nothing
			c.contention.seen(e.hot)
		}
		if ev != nil && err == nil {
			ev.Waited = true
			ev.metHolders(r.holder, r.meta, r.metas)
		}
		if wait == 0 {
			return ctx, r.busy(e.name)
		}
		wt := &waitTurn{c: c, q: e, name: e.name, k: &e.lockBase.k, a: a, lease: lease, ev: ev, busy: r, answered: err == nil, lastBusy: sent, lastErr: err}
		if t, err = wt.run(ctx, wait, sent); err != nil {
			return ctx, err
		}
	}
	if err := e.syncReplicas(ctx, a.field); err != nil {
		return ctx, err
	}
	return e.startHold(ctx, a, lease, t, !r.won), nil
}

// lateAcquire is within's late for a round trip of field's acquisition: it
// undoes the acquisition once more, for it may have won after the first
// clean-up ran.
func (e engine) lateAcquire(field string) func(acquireReply, error) {
	return func(acquireReply, error) { e.abandon(field) }
}

// retry is a queued waiter's next attempt (queuer), bounded by ctx.
func (e engine) retry(ctx context.Context, a attempt) (acquireReply, error) {
	a.enqueue, a.queued = true, true
	return bounded(e.c, ctx, func(ctx context.Context) (acquireReply, error) {
		return e.ops.try(ctx, a)
	}, e.lateAcquire(a.field))
}

// claim gives what was handed to a.field its full TTL (queuer), bounded by
// ctx; a claim that succeeds after the caller gave up is undone.
func (e engine) claim(ctx context.Context, a attempt) (int64, bool) {
	type claimed struct {
		token int64
		ok    bool
	}
	r, err := bounded(e.c, ctx, func(ctx context.Context) (claimed, error) {
		token, ok := e.ops.claimOnce(ctx, a)
		return claimed{token, ok}, nil
	}, func(claimed, error) { e.abandon(a.field) })
	return r.token, err == nil && r.ok
}

// leave takes a waiter whose wait ran out out of the queue, keeping what
// was handed to it just then (queuer), within the release timeout.
func (e engine) leave(ctx context.Context, a attempt) (int64, bool, error) {
	return e.leaveQueue(ctx, a.field, true, a.ttl)
}

// leaveQueue is leaveWithin detached from ctx, bounded by the release
// timeout: a caller that gives up still leaves the queue.
func (e engine) leaveQueue(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.opts.releaseTimeout)
	defer cancel()
	return e.leaveWithin(lctx, field, keep, ttl)
}

// leaveWithin takes field out of the queue, bounded by ctx (leaver): what
// it kept after the caller gave up is undone.
func (e engine) leaveWithin(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	type left struct {
		token int64
		ok    bool
	}
	r, err := bounded(e.c, ctx, func(ctx context.Context) (left, error) {
		token, ok, err := e.ops.leaveOnce(ctx, field, keep, ttl)
		return left{token, ok}, err
	}, func(r left, _ error) {
		if r.ok { // kept what was handed over just then: nobody will use it
			e.abandon(field)
		}
	})
	return r.token, r.ok, err
}

// abandon undoes an acquisition that failed or gave up (queuer): it takes
// field out of the queue and gives back what field got after all (a reply
// that was lost, a hand-off that came as the waiter left). It runs on the
// renewer's goroutine, so that the caller returns on time even when Redis
// does not answer.
func (e engine) abandon(field string) {
	e.c.renewer.abandon(e, field)
}

// syncReplicas waits for WithReplicaSync's replicas, bounded by ctx; the
// acquisition is given up when they do not acknowledge it.
func (e engine) syncReplicas(ctx context.Context, field string) error {
	if e.c.replicas == 0 {
		return nil
	}
	return boundedErr(e.c, ctx, func(ctx context.Context) error {
		return e.c.store.syncReplicas(ctx, e, field)
	}, func(error) { e.abandon(field) })
}

// released is what a kind's release of one level found (kindOps.releaseOnce).
type released int8

const (
	releasedLevel released = iota // other levels of the hold remain
	releasedHold                  // the hold ended: released, or left to expire (UnlockAt)
	releasedGone                  // the hold was gone, expired or someone else's
)

// release releases the level that hold carries (Unlock; with expireMS > 0
// UnlockAt). It takes the owner from hold and runs detached from it,
// bounded by the release timeout. The local count of levels decides the
// last one: Redis may count one more while a re-entry whose reply was lost
// waits to be undone. After a Redis error the level stays held (a retry
// reuses its latch); an owner's last level stops renewing, so that the lock
// expires within the watchdog timeout even without a retry.
func (e engine) release(hold context.Context, expireMS int64) error {
	lvl, err := e.levelToRelease(hold)
	if err != nil {
		return err
	}
	defer lvl.mu.Unlock()
	h, c := lvl.h, e.c
	h.beginRelease()
	defer h.endRelease()
	last := h.addLevels(0) == 1
	// Bounded (bounded.go) without a closure, on the hot path: on the
	// caller's goroutine when go-redis honours the deadline, or when the
	// read timeout bounds the round trip (an inline release, on the
	// clock's shortened deadline: releasectx.go).
	var res released
	var rctx context.Context
	if expireMS > 0 && last && h.lease == 0 { // UnlockAt: no renewal may land after it
		wctx, cancel := context.WithTimeout(context.WithoutCancel(hold), c.opts.releaseTimeout)
		start := time.Now()
		c.renewer.awaitRound(wctx, h)
		cancel()
		expireMS = max(expireMS-time.Since(start).Milliseconds(), 0) // at is no later for the wait (0: it passed, release now)
	}
	if c.ctxTrusted || c.releases.inline > 0 {
		rctx = c.releaseContext(lvl, hold, !c.ctxTrusted)
		res, err = e.ops.releaseOnce(rctx, lvl, expireMS, last)
	} else {
		rctx = c.releaseContext(lvl, hold, false)
		res, err = within(rctx, func(ctx context.Context) (released, error) {
			return e.ops.releaseOnce(ctx, lvl, expireMS, last)
		}, nil)
	}
	if err != nil {
		if h.addLevels(0) == 1 {
			h.end(endReleased, nil)
		}
		return e.permissionErr(withCtxErr(rctx, fmt.Errorf("lockmw: unlock %s %q: %w", e.kind, e.name, err)))
	}
	lvl.released = true
	h.addLevels(-1)
	if res == releasedGone {
		cause := fmt.Errorf("%w: %s %q was gone, expired or someone else's at unlock", ErrLockLost, e.kind, e.name)
		h.end(endLost, cause)
		lvl.cancelLevel(cause)
		return cause
	}
	if res == releasedHold {
		h.end(endReleased, nil)
	}
	lvl.cancelLevel(nil)
	return nil
}

// permissionErr is err, or when err holds the server's NOPERM (or, from a
// script's call, "ERR The user executing the script can't access…") an
// ErrNoPermission naming the keys and channels the lock uses.
func (e engine) permissionErr(err error) error {
	if err == nil || !(backend.HasPrefix(err, "NOPERM") || backend.HasPrefix(err, "The user executing the script can't access")) {
		return err
	}
	k := &e.lockBase.k
	keys := []string{k.lock, k.queue, k.waiters}
	for _, x := range []string{k.token, k.permits} {
		if x != "" {
			keys = append(keys, x)
		}
	}
	keys = append(keys, k.latchBase+"*")
	if k.timeouts != "" {
		keys = append(keys, k.timeouts+"*")
	}
	where := ""
	if ns := e.c.ns; ns != "" {
		where = fmt.Sprintf(" (all under the namespace: ~%s* &%s*)", ns, ns)
	}
	// The scripts are given the channels' names as keys too: an ACL needs
	// them as key patterns as well as channel patterns (docs/security.md).
	return fmt.Errorf("%w: the Redis user may not use %s %q: it needs the keys %s and the channels %s, %s* (as keys and as channels)%s: %w",
		ErrNoPermission, e.kind, e.name, strings.Join(keys, " "), k.channel, k.handoff, where, err)
}
