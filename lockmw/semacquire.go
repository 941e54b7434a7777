package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// The semaphore's operations for the engine (kindOps): its permits wait in
// the queue every kind shares, are holds renewed by the Client's watchdog
// (semrenew.lua), and its abandoned attempts are undone by the renewer.

// firstTry is try: a semaphore has no fast path.
func (s *Semaphore) firstTry(ctx context.Context, a attempt) (acquireReply, error) {
	return s.try(ctx, a)
}

// try runs semacquire.lua once for a, with what the Client saw of the
// name's reservation for Redisson's waiters (reserve.go).
func (s *Semaphore) try(ctx context.Context, a attempt) (acquireReply, error) {
	c := s.c
	args := append(make([]any, 0, 3+len(s.keyArgs)+10), "evalsha", scripts.SemAcquireSHA, len(s.keyArgs))
	args = append(args, s.keyArgs...)
	args = append(args, c.ttlArg(a.ttl), a.fieldArg, flag(a.enqueue), c.graceArg, s.permitsArg, flag(a.queued),
		c.claimArg(a.ttl), c.publishArg(ctx), semIdleArg)
	if word := c.usedReservation(&s.k); word != "" {
		args = append(args, word)
	}
	res, err := scripts.RunSlice(ctx, c.proc, scripts.SemAcquireSrc, args)
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire a permit of %q: %w", s.name, err)
	}
	r, err := parseAcquire(res)
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire a permit of %q: %w", s.name, err)
	}
	return r, nil
}

// claimOnce gives a permit handed to a.field its full TTL (semrenew.lua).
func (s *Semaphore) claimOnce(ctx context.Context, a attempt) (int64, bool) {
	res, err := scripts.Eval(ctx, s.c.be, scripts.SemRenew, []string{s.k.permits}, s.c.ttlArg(a.ttl), a.field).Int64Slice()
	return 0, err == nil && len(res) == 1 && res[0] == 1
}

// leaveOnce runs semleave.lua.
func (s *Semaphore) leaveOnce(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	res, err := scripts.Eval(ctx, s.c.be, scripts.SemLeave, s.fullKeys(s.k.latchBase), field, s.c.publishCmd(ctx), flag(keep), s.c.ttlArg(ttl), msCeil(semIdleTTL)).Slice()
	if err != nil {
		s.c.log.Warn("lockmw: leaving a semaphore's queue failed", "name", s.name, "field", field, "err", err)
		return 0, false, err
	}
	return 0, len(res) >= 1 && asInt(res[0]) == 1, nil
}

// reenter is never called: a permit is not reentrant (lockBase.reentrant).
func (s *Semaphore) reenter(ctx context.Context, _ *level) (context.Context, error) {
	return ctx, fmt.Errorf("lockmw: semaphore %q: %w", s.name, errors.ErrUnsupported)
}

// releaseOnce gives lvl's permit back (semrelease.lua under the level's
// latch, with the window of a reservation it may make: reserve.go), or lets
// it expire in expireMS (semunlockat.lua) (kindOps).
func (s *Semaphore) releaseOnce(ctx context.Context, lvl *level, expireMS int64, _ bool) (released, error) {
	var n int64
	var err error
	if expireMS > 0 {
		n, err = scripts.Eval(ctx, s.c.be, scripts.SemUnlockAt, []string{s.k.permits}, lvl.h.field, expireMS).Int64()
	} else {
		// fullKeys with the level's latch, and the arguments, boxed once
		args := append(lvl.releaseLine(3+7+5), "evalsha", scripts.SemReleaseSHA, 7)
		args = append(args, s.keyArgs...)
		args = append(args, lvl.latchArg, s.handoffArg, lvl.h.fieldArg, s.c.publishArg(ctx), s.c.latchArg, semIdleArg, s.rtt.windowMS())
		sent := time.Now()
		n, err = scripts.RunInt64(ctx, s.c.proc, scripts.SemReleaseSrc, args)
		if err == nil {
			s.rtt.observe(time.Since(sent))
		}
	}
	switch {
	case err != nil:
		return 0, err
	case n != scripts.SemReleased && n != scripts.ReleaseToExpire:
		return releasedGone, nil
	}
	return releasedHold, nil
}

// semIdleArg is semIdleTTL in ms, boxed once.
var semIdleArg any = msCeil(semIdleTTL)

// fullKeys are the keys of the scripts that may hand a permit over, with
// the latch key latch (lib.lua's semaphore layout).
func (s *Semaphore) fullKeys(latch string) []string {
	return []string{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.permits, latch, s.k.handoff}
}
