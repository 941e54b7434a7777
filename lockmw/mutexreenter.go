package lockmw

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// reenter adds a level to the hold that outer belongs to.
func (m *Mutex) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if ctx.Err() != nil {
		return ctx, errors.Join(ErrNotAcquired, ctxErr(ctx))
	}
	c, h := m.c, outer.h
	if h.getState() == holdLost {
		return ctx, ErrLockLost
	}
	reqID := c.requestID()
	n, err := m.reenterWithin(ctx, h.field, reqID)
	if err != nil {
		// The script may have run without our hearing of it: undo it in
		// the background, or the hold would keep a level nobody can unlock.
		c.renewer.undoReentry(m, h.field, reqID)
		return ctx, withCtxErr(ctx, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err))
	}
	switch {
	case n == scripts.ReenterUndone:
		return ctx, fmt.Errorf("lockmw: re-enter %q: abandoned", m.name)
	case n < 0: // scripts.ReenterGone
		h.end(endLost, fmt.Errorf("%w: %q was gone when re-entered", ErrLockLost, m.name))
		return ctx, ErrLockLost
	}
	h.addLevels(1)
	lctx, cancel := context.WithCancelCause(ctx)
	lvl := &level{h: h, parent: topLevel(ctx), cancel: cancel}
	return context.WithValue(lctx, levelKey{}, lvl), nil
}

// undoReentryOnce makes the mutex a reentryUndoer (chores.go).
func (m *Mutex) undoReentryOnce(ctx context.Context, field, reqID string) error {
	return m.c.store.undoReenter(ctx, m, field, reqID)
}

// reenterWithin runs the re-entry script, bounded by ctx (bounded.go): a reply
// that arrives after the caller gave up has the re-entry undone again.
func (m *Mutex) reenterWithin(ctx context.Context, field, reqID string) (int64, error) {
	if !m.c.mustBound(ctx) { // the hot path: bounded without its closures
		return m.c.store.reenter(ctx, m, field, reqID)
	}
	return within(ctx, func(ctx context.Context) (int64, error) {
		return m.c.store.reenter(ctx, m, field, reqID)
	}, func(int64, error) { m.c.renewer.undoReentry(m, field, reqID) })
}
