package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The semaphore's side of the shared parts: its acquisition waits in the
// same queue with the same waitTurn (Semaphore implements queuer), its
// permits are holds renewed by the Client's watchdog (semrenew.lua), and its
// abandoned attempts are undone by the renewer (leaver).

// acquire runs a new acquisition of a permit: one attempt, then the wait
// (also after a first attempt that failed on a transient error: firstFailed).
func (s *Semaphore) acquire(ctx context.Context, wait, lease time.Duration, ev *AcquireEndEvent) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, errors.Join(ErrNotAcquired, err)
	}
	c := s.c
	a := attempt{field: c.id + ":" + formatUint(c.ownerSeq.Add(1)), ttl: lease, enqueue: wait > 0}
	a.fieldArg = a.field
	if a.ttl == 0 {
		a.ttl = c.opts.watchdog
	}
	sent := time.Now()
	r, err := s.first(ctx, a)
	if err != nil {
		if end := firstFailed(ctx, s, a.field, wait, err); end != nil {
			return ctx, end
		}
	}
	t := turn{base: sent}
	if !r.won {
		if ev != nil && err == nil {
			ev.Waited, ev.Holder = true, r.holder
		}
		if wait == 0 {
			return ctx, r.busy(s.name)
		}
		wt := &waitTurn{c: c, q: s, name: s.name, k: &s.k, a: a, lease: lease, ev: ev, busy: r, answered: err == nil, lastBusy: sent, lastErr: err}
		if t, err = wt.run(ctx, wait, sent); err != nil {
			return ctx, err
		}
	}
	return s.startHold(ctx, a, lease, t, !r.won), nil
}

// try runs semacquire.lua once for a.
func (s *Semaphore) try(ctx context.Context, a attempt) (acquireReply, error) {
	c := s.c
	res, err := semAcquireScript.Run(ctx, s.rdb, s.akeys, c.ttlArg(a.ttl), a.field, flag(a.enqueue),
		c.graceArg, s.permits, flag(a.queued), c.claimArg(a.ttl), c.publishCmd(ctx), msCeil(semIdleTTL)).Slice()
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire a permit of %q: %w", s.name, err)
	}
	r, err := parseAcquire(res)
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire a permit of %q: %w", s.name, err)
	}
	return r, nil
}

// first runs a new acquisition's first attempt, bounded by ctx; a reply
// that arrives after the caller gave up has the acquisition undone again.
func (s *Semaphore) first(ctx context.Context, a attempt) (acquireReply, error) {
	if !s.c.mustBound(ctx) {
		return s.try(ctx, a)
	}
	return within(ctx, func(ctx context.Context) (acquireReply, error) {
		return s.try(ctx, a)
	}, func(acquireReply, error) { s.abandon(a.field) })
}

// retry is a queued waiter's next attempt (queuer), bounded by ctx.
func (s *Semaphore) retry(ctx context.Context, a attempt) (acquireReply, error) {
	a.enqueue, a.queued = true, true
	return s.first(ctx, a)
}

// claim gives a permit handed to a.field its full TTL (queuer), bounded by
// ctx; a claim that succeeds after the caller gave up is undone.
func (s *Semaphore) claim(ctx context.Context, a attempt) (int64, bool) {
	run := func(ctx context.Context) (bool, error) {
		res, err := semRenewScript.Run(ctx, s.rdb, []string{s.k.permits}, s.c.ttlArg(a.ttl), a.field).Int64Slice()
		return err == nil && len(res) == 1 && res[0] == 1, err
	}
	if !s.c.mustBound(ctx) {
		ok, _ := run(ctx)
		return 0, ok
	}
	ok, err := within(ctx, run, func(bool, error) { s.abandon(a.field) })
	return 0, err == nil && ok
}

// leave takes a waiter whose wait ran out out of the queue, keeping a
// permit handed to it just then (queuer).
func (s *Semaphore) leave(ctx context.Context, a attempt) (int64, bool, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.opts.releaseTimeout)
	defer cancel()
	return s.leaveWithin(lctx, a.field, true, a.ttl)
}

// leaveWithin runs semleave.lua for field, bounded by ctx (leaver); a
// permit kept after the caller gave up is undone.
func (s *Semaphore) leaveWithin(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	run := func(ctx context.Context) (bool, error) {
		res, err := semLeaveScript.Run(ctx, s.rdb, s.fullKeys(""), field, s.c.publishCmd(ctx), flag(keep), s.c.ttlArg(ttl), msCeil(semIdleTTL)).Slice()
		if err != nil {
			s.c.log.Warn("lockmw: leaving a semaphore's queue failed", "name", s.name, "field", field, "err", err)
			return false, err
		}
		return len(res) >= 1 && asInt(res[0]) == 1, nil
	}
	if !s.c.mustBound(ctx) {
		ok, err := run(ctx)
		return 0, ok, err
	}
	ok, err := within(ctx, run, func(ok bool, _ error) {
		if ok {
			s.abandon(field)
		}
	})
	return 0, ok, err
}

// abandon undoes an acquisition that failed or gave up, on the renewer's
// goroutine (queuer).
func (s *Semaphore) abandon(field string) {
	s.c.renewer.abandon(s, field)
}

// releaseWithin runs semrelease.lua for field under the latch of reqID
// (semunlockat.lua with expireMS > 0), bounded by ctx (the release timeout).
func (s *Semaphore) releaseWithin(ctx context.Context, field, reqID string, expireMS int64) (int64, error) {
	run := func(ctx context.Context) (int64, error) {
		if expireMS > 0 {
			return semUnlockAtScript.Run(ctx, s.rdb, []string{s.k.permits}, field, expireMS).Int64()
		}
		return semReleaseScript.Run(ctx, s.rdb, s.fullKeys(reqID), field, s.c.publishCmd(ctx), s.c.latchArg, msCeil(semIdleTTL)).Int64()
	}
	if !s.c.mustBound(ctx) {
		return run(ctx)
	}
	if ictx, cancel, ok := s.c.inlineBound(ctx); ok {
		defer cancel()
		return run(ictx)
	}
	return within(ctx, run, nil)
}

// fullKeys are the keys of the scripts that may hand a permit over, with
// the latch of reqID (lib.lua's semaphore layout).
func (s *Semaphore) fullKeys(reqID string) []string {
	return []string{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.permits, s.k.latchBase + reqID, s.k.handoff}
}
