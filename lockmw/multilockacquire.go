package lockmw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// maxBackoffPause bounds the random pause after consecutive back-offs.
const maxBackoffPause = 64 * time.Millisecond

// memberHold is one member's hold in a multi-lock's hold: the context its
// TryLock returned, which its Unlock takes.
type memberHold struct {
	l        Locker
	hold     context.Context
	stop     func() bool // stops watching hold for a loss
	released bool        // Unlock gave it back (or found it lost)
}

// acquire runs rounds until every member is held, the wait ends or a
// member fails for good; ev (nil without hooks) learns whether a member
// was busy and who held it.
func (m *MultiLock) acquire(ctx context.Context, wait, lease time.Duration, ev *AcquireEndEvent) (context.Context, error) {
	var deadline time.Time
	if wait != Forever {
		deadline = time.Now().Add(wait)
	}
	first := 0 // the member waited for: the first in order, then the last one found busy
	for backoffs := 0; ; backoffs++ {
		held, failed, err := m.round(ctx, first, remaining(deadline, wait), lease)
		if err == nil {
			return m.startHold(ctx, held, lease, ev), nil
		}
		var busy *BusyError
		if ev != nil && errors.As(err, &busy) {
			ev.Waited = true
			ev.metHolders(busy.Holder, busy.Metadata, busy.metas)
		}
		err = fmt.Errorf("lockmw: %s: member %q: %w", m.name, m.members[failed].Name(), err)
		// The member waited for failed for good, or nothing is left to wait.
		if failed == first || wait == 0 || ctx.Err() != nil || remaining(deadline, wait) <= 0 {
			return ctx, withCtxErr(ctx, err)
		}
		first = failed
		if backoffs > 0 && !pause(ctx, backoffs, deadline) {
			return ctx, withCtxErr(ctx, err)
		}
	}
}

// remaining is what is left of a wait that ends at deadline (zero:
// Forever).
func remaining(deadline time.Time, wait time.Duration) time.Duration {
	if deadline.IsZero() {
		return wait
	}
	return max(time.Until(deadline), 0)
}

// round takes the members once: first with the wait (holding nothing yet),
// the others in order with a single attempt each. On failure it releases
// what it took and returns the index of the member that failed and its
// error.
func (m *MultiLock) round(ctx context.Context, first int, wait, lease time.Duration) ([]memberHold, int, error) {
	held := make([]memberHold, 0, len(m.members))
	prev := ctx // carries the levels of the members taken so far
	for step := range len(m.members) {
		i, w := step, time.Duration(0)
		switch {
		case step == 0:
			i, w = first, wait
		case step <= first:
			i = step - 1
		}
		l := m.members[i]
		hold, err := l.TryLock(levelsCtx{Context: ctx, levels: prev}, w, lease)
		if err != nil {
			m.giveBack(held)
			return nil, i, err
		}
		held = append(held, memberHold{l: l, hold: hold})
		prev = hold
	}
	return held, 0, nil
}

// giveBack releases the members of a round that failed, the last taken
// first. A release that fails leaves that member to expire (its Client
// stops renewing it); it is logged.
func (m *MultiLock) giveBack(held []memberHold) {
	for i := len(held) - 1; i >= 0; i-- {
		if err := held[i].l.Unlock(held[i].hold); err != nil {
			m.c.log.Warn("lockmw: multi-lock back-off: release failed; the member expires", "name", m.name, "member", held[i].l.Name(), "err", err)
		}
	}
}

// pause waits a random while before the next round after n consecutive
// back-offs: up to 1 ms doubling to maxBackoffPause, not past deadline; false
// when ctx ended meanwhile.
func pause(ctx context.Context, n int, deadline time.Time) bool {
	d := min(time.Millisecond<<min(n-1, 6), maxBackoffPause)
	d = rand.N(d + 1)
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// levelsCtx is the context a member is taken with: the caller's, but for
// the levels, which are those of the members taken before it. So a
// member's hold context is cancelled, and its spans parented, as if it had
// been taken alone, and the last one carries every member's level: passed to
// a member, it re-enters.
type levelsCtx struct {
	context.Context                 // the caller's: cancellation, deadline, every other value
	levels          context.Context // the levels
}

func (c levelsCtx) Value(key any) any {
	if _, ok := key.(levelKey); ok {
		return c.levels.Value(key)
	}
	return c.Context.Value(key)
}
