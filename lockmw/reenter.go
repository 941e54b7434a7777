package lockmw

import (
	"context"
	"errors"
	"fmt"
)

// reenter adds a level to the hold that outer belongs to.
func (m *Mutex) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, errors.Join(ErrNotAcquired, err)
	}
	c, h := m.c, outer.h
	if h.getState() == holdLost {
		return ctx, ErrLockLost
	}
	reqID := c.requestID()
	n, err := c.store.reenter(ctx, m, h.field, reqID)
	if err != nil {
		// The script may have run without our hearing of it: undo it in
		// the background, or the hold would keep a level nobody can unlock.
		c.renewer.undoReentry(m, h.field, reqID)
		return ctx, withCtxErr(ctx, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err))
	}
	switch {
	case n == -2: // undone by an earlier, abandoned try of this very request
		return ctx, fmt.Errorf("lockmw: re-enter %q: abandoned", m.name)
	case n < 0:
		h.end(endLost, fmt.Errorf("%w: %q was gone when re-entered", ErrLockLost, m.name))
		return ctx, ErrLockLost
	}
	h.addLevels(1)
	lctx, cancel := context.WithCancelCause(ctx)
	lvl := &level{h: h, parent: topLevel(ctx), cancel: cancel}
	return context.WithValue(lctx, levelKey{}, lvl), nil
}
