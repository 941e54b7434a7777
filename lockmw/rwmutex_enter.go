package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// Re-entry of a read-write lock's sides (kindOps.reenter): a level more of a
// side's own hold, or the writer taking the read side, which makes a read
// hold of its own beside the write hold (Redisson's writer's reader field).

// reenter adds a level to the hold of outer: the side's own, or (the read
// side) the caller's write hold, whose owner then takes the read side.
func (s *rwSide) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if ctx.Err() != nil {
		return ctx, errors.Join(ErrNotAcquired, ctxErr(ctx))
	}
	if outer.h.lk.kind != s.kind {
		return s.enterAsWriter(ctx, outer.h)
	}
	return s.reenterHold(ctx, outer.h)
}

// reenterHold adds a level to h, a hold of this side.
func (s *rwSide) reenterHold(ctx context.Context, h *hold) (context.Context, error) {
	if h.getState() == holdLost {
		return ctx, ErrLockLost
	}
	hf := s.hf(h.field)
	if _, err := s.reenterWithin(ctx, hf, hf); err != nil {
		if errors.Is(err, ErrLockLost) {
			h.end(endLost, err)
		}
		return ctx, err
	}
	h.addLevels(1)
	lctx, cancel := context.WithCancelCause(ctx)
	lvl := &level{h: h, parent: topLevel(ctx), cancel: cancel}
	return context.WithValue(lctx, levelKey{}, lvl), nil
}

// enterAsWriter gives the owner of the write hold wh the read side: a level
// more of the read hold it took before, else a new read hold of its field
// (a reader field beside its writer field, as in Redisson). The read hold's
// context keeps ctx's values but ends with the caller's context of the
// write hold, not with the write hold: it outlives an Unlock of the write
// side (a downgrade).
func (s *rwSide) enterAsWriter(ctx context.Context, wh *hold) (context.Context, error) {
	if wh.getState() != holdActive {
		return ctx, ErrLockLost
	}
	wh.readMu.Lock()
	defer wh.readMu.Unlock()
	if rh := wh.readHold; rh != nil && rh.getState() == holdActive {
		return s.reenterHold(ctx, rh)
	}
	sent := time.Now()
	ttl, err := s.reenterWithin(ctx, wh.field, wh.field+wh.lk.suffix)
	if err != nil {
		if errors.Is(err, ErrLockLost) {
			wh.end(endLost, err)
		}
		return ctx, err
	}
	lease := wh.lease
	if lease > 0 { // the write hold's regime: what is left of its lease
		lease = time.Duration(ttl) * time.Millisecond
	}
	a := attempt{field: wh.field, fieldArg: wh.field, ttl: lease}
	hctx := s.startHold(valuesOf{Context: wh.hookCtx, vals: ctx}, a, lease, turn{base: sent}, false)
	wh.readHold = s.findLevel(hctx).h
	return hctx, nil
}

// valuesOf is a context that ends with Context and carries vals' values.
type valuesOf struct {
	context.Context
	vals context.Context
}

func (v valuesOf) Value(key any) any { return v.vals.Value(key) }

// reenterWithin runs rwreenter.lua for the field hf, which must hold must,
// bounded by ctx: the TTL in ms of the level's timeout key (a reader's). A
// reply lost, or arriving after the caller gave up, has the re-entry undone
// in the background.
func (s *rwSide) reenterWithin(ctx context.Context, hf, must string) (int64, error) {
	c := s.c
	reqID := c.requestID()
	res, err := bounded(c, ctx, func(ctx context.Context) ([]int64, error) {
		return scripts.Eval(ctx, s.c.be, scripts.RWReenter, []string{s.k.lock, s.k.latchBase + reqID}, hf, c.latchArg, must).Int64Slice()
	}, func([]int64, error) { c.renewer.undoReentry(s, hf, reqID) })
	if err == nil && len(res) == 0 {
		err = fmt.Errorf("unexpected empty reply")
	}
	if err != nil {
		c.renewer.undoReentry(s, hf, reqID)
		return 0, withCtxErr(ctx, fmt.Errorf("lockmw: re-enter %s %q: %w", s.kind, s.name, err))
	}
	switch n := res[0]; {
	case n == scripts.ReenterUndone:
		return 0, fmt.Errorf("lockmw: re-enter %s %q: abandoned", s.kind, s.name)
	case n < 0:
		return 0, fmt.Errorf("%w: %s %q was gone when re-entered", ErrLockLost, s.kind, s.name)
	}
	if len(res) < 2 {
		return 0, nil
	}
	return res[1], nil
}

// undoReentryOnce makes a side a reentryUndoer (chores.go): field is the
// hash field.
func (s *rwSide) undoReentryOnce(ctx context.Context, hf, reqID string) error {
	return scripts.Eval(ctx, s.c.be, scripts.RWUnreenter, []string{s.k.lock, s.k.latchBase + reqID}, hf, s.c.latchArg).Err()
}
