package lockmw

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// A read-write lock side's operations for the engine (kindOps): its scripts
// (rw*.lua, on rwlib.lua's layout) run with the field the side holds in the
// hash, the owner's field plus the side's suffix (":write" for the writer).

// hf is the hash field of the owner field.
func (s *rwSide) hf(field string) string { return field + s.suffix }

// firstTry is try: a read-write lock has no fast path.
func (s *rwSide) firstTry(ctx context.Context, a attempt) (acquireReply, error) {
	return s.try(ctx, a)
}

// try runs rwacquire.lua once for a.
func (s *rwSide) try(ctx context.Context, a attempt) (acquireReply, error) {
	c := s.c
	gen := ""
	if a.enqueue || a.queued { // it may have to leave a reserved lock alone
		gen = c.usedReservation(&s.k)
	}
	res, err := scripts.Eval(ctx, s.c.be, scripts.RWAcquire, s.akeys, c.ttlArg(a.ttl), s.hf(a.field), flag(a.enqueue),
		c.graceArg, flag(s.fenced), flag(a.queued), c.claimArg(a.ttl), c.tokenTTLArg, gen).Slice()
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire %s %q: %w", s.kind, s.name, err)
	}
	r, err := parseAcquire(res)
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire %s %q: %w", s.kind, s.name, err)
	}
	return r, nil
}

// claimOnce runs rwclaim.lua.
func (s *rwSide) claimOnce(ctx context.Context, a attempt) (int64, bool) {
	res, err := scripts.Eval(ctx, s.c.be, scripts.RWClaim, []string{s.k.lock, s.k.token}, s.hf(a.field), s.c.ttlArg(a.ttl), flag(s.fenced)).Slice()
	if err != nil || len(res) < 2 || asInt(res[0]) != 1 {
		return 0, false
	}
	return asInt(res[1]), true
}

// leaveOnce runs rwleave.lua.
func (s *rwSide) leaveOnce(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	c := s.c
	res, err := scripts.Eval(ctx, s.c.be, scripts.RWLeave, s.fullKeys(s.k.latchBase+"leave"), s.hf(field), c.publishCmd(ctx), flag(keep), c.ttlArg(ttl), c.tokenTTLArg, flag(s.fenced)).Slice()
	if err != nil {
		c.log.Warn("lockmw: leaving a read-write lock's queue failed", "name", s.name, "field", field, "err", err)
		return 0, false, err
	}
	if len(res) >= 2 && asInt(res[0]) == 1 {
		return asInt(res[1]), true, nil
	}
	return 0, false, nil
}

// releaseOnce runs rwrelease.lua under the level's latch.
func (s *rwSide) releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error) {
	c := s.c
	latch := lvl.latch // the engine's: k.latchBase + reqID
	sent := time.Now()
	n, err := scripts.Eval(ctx, s.c.be, scripts.RWRelease, s.fullKeys(latch), s.hf(lvl.h.field), c.publishCmd(ctx), c.latchArg,
		expireArg(expireMS), flag(last), c.tokenTTLArg, s.single.rtt.windowMS()).Int64()
	if err != nil {
		return 0, err
	}
	r := releasedOf(n)
	if r == releasedHold {
		s.single.rtt.observe(time.Since(sent))
	}
	return r, nil
}

// fullKeys are the keys of the scripts that may hand the lock over, with the
// latch key latch (rwlib.lua's layout).
func (s *rwSide) fullKeys(latch string) []string {
	return []string{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.token, latch, s.k.handoff}
}
