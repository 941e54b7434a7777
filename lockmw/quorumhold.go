package lockmw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// quorumVotes counts the members' answers to a per-hold script.
type quorumVotes struct{ ok, gone, failed int }

// outcome is what n members' votes say when need make a majority.
func (v quorumVotes) outcome(n, need int) RenewalOutcome {
	switch {
	case v.ok >= need:
		return RenewalOK
	case v.gone > n-need:
		return RenewalLost
	default:
		return RenewalFailed
	}
}

// decided reports whether the votes decide the outcome whatever the pending
// members answer: renewed, gone, or neither even if every pending one
// answered either way.
func (v quorumVotes) decided(pending, n, need int) bool {
	return v.ok >= need || v.gone > n-need || (v.ok+pending < need && v.gone+pending <= n-need)
}

// vote runs a per-hold request on every master and counts the answers as
// they arrive, until they decide: a negative result means the hold is gone
// there. It returns the outcome, the largest result of the masters that
// have the hold, and the errors. late gets the answers that come after the
// decision.
func (q *quorumStore) vote(ctx context.Context, send func(ctx context.Context, mb *member) (int64, error), late func(answer[int64])) (RenewalOutcome, int64, error) {
	var v quorumVotes
	var top int64
	var errs []error
	n := len(q.members)
	ask(ctx, q, send, func(a answer[int64], pending int) bool {
		switch {
		case a.err != nil:
			v.failed++
			errs = append(errs, a.err)
		case a.v < 0:
			v.gone++
		default:
			v.ok++
			top = max(top, a.v)
		}
		return v.decided(pending, n, q.need)
	}, late)
	return v.outcome(n, q.need), top, errors.Join(errs...)
}

// reenter adds a level on every master that has the hold.
func (q *quorumStore) reenter(ctx context.Context, m *Mutex, field, reqID string) (int64, error) {
	c := q.c
	keys := []string{m.k.lock, m.k.latchBase + reqID}
	out, n, err := q.vote(ctx, func(ctx context.Context, mb *member) (int64, error) {
		return mb.run(ctx, scripts.Reenter, keys, field, c.latchArg).Int64()
	}, nil)
	switch out {
	case RenewalOK:
		return n, nil
	case RenewalLost:
		return -1, nil
	}
	return 0, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err)
}

// undoReenter runs unreenter.lua on every master; it returns once a
// majority answered.
func (q *quorumStore) undoReenter(ctx context.Context, m *Mutex, field, reqID string) error {
	keys := []string{m.k.lock, m.k.latchBase + reqID}
	return q.everywhere(ctx, func(ctx context.Context, mb *member) error {
		return mb.run(ctx, scripts.Unreenter, keys, field, q.c.latchArg).Err()
	}, nil)
}

// everywhere runs send on every master and returns once a majority
// answered without an error, or too few still can (then with the errors).
// redo, when not nil, is sent again in the background to each master that
// failed, before or after the decision.
func (q *quorumStore) everywhere(ctx context.Context, send func(ctx context.Context, mb *member) error, redo func(mb *member)) error {
	var ok int
	var errs []error
	failed := func(i int) {
		if redo != nil {
			redo(q.members[i])
		}
	}
	ask(ctx, q, func(ctx context.Context, mb *member) (struct{}, error) {
		return struct{}{}, send(ctx, mb)
	}, func(a answer[struct{}], pending int) bool {
		if a.err != nil {
			errs = append(errs, a.err)
			failed(a.i)
		} else {
			ok++
		}
		return ok >= q.need || ok+pending < q.need
	}, func(a answer[struct{}]) {
		if a.err != nil {
			failed(a.i)
		}
	})
	if ok >= q.need {
		return nil
	}
	return fmt.Errorf("lockmw: %d of %d masters answered, %d needed: %w", ok, len(q.members), q.need, errors.Join(errs...))
}

// release releases one level on every master. The owner's last level
// deletes the lock whatever a master counted; it ends the field's
// acquisitions too, with the end latch on the masters that have not
// answered one of them (quorumend.go), and is sent again in the background
// to a master that failed.
func (q *quorumStore) release(ctx context.Context, m *Mutex, rr releaseReq) (int64, error) {
	c := q.c
	keys := m.fullKeys(rr.lvl.reqID)
	args := []any{rr.h.field, "publish", c.latchArg, rr.expireMS, flag(rr.last), c.tokenTTLArg}
	var dirty []bool
	var latch time.Duration
	if rr.last {
		dirty = q.takeDirty(rr.h.field)
		ttl := rr.h.lease
		if ttl == 0 {
			ttl = c.opts.watchdog
		}
		latch = q.latchFor(ttl)
	}
	// The requests that end the hold on member i: the release, after the
	// end latch where a late acquisition may still run. The two must run
	// back to back, so both go with EVAL, their scripts' sources, there: a
	// master that lacks a script (never used there, or flushed by a
	// restart) answers its EVALSHA with NOSCRIPT and runs the others of the
	// pipeline, and the failed one runs only when sent again, after a late
	// acquisition may have run in between (the end latch, run last, frees
	// nothing; a release run last finds the lock freed by nothing).
	calls := func(i int) []redo {
		until := time.Now().Add(latch)
		rel := redo{s: scripts.Release, call: scripts.Call{Keys: keys, Args: args}, until: until}
		if dirty == nil || !dirty[i] {
			return []redo{rel}
		}
		rel.eval = true
		return []redo{{s: scripts.QuorumEnd, call: q.endCall(m, rr.h.field, endAll, latch, false), until: until, eval: true}, rel}
	}
	out, _, err := q.vote(ctx, func(ctx context.Context, mb *member) (int64, error) {
		cmds := mb.pipeline(ctx, calls(mb.i))
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				if rr.last { // a level's latch may expire before a repeat: it could count twice
					mb.later(calls(mb.i)...)
				}
				return 0, err
			}
		}
		return cmds[len(cmds)-1].Int64() // the release's reply
	}, nil)
	switch out {
	case RenewalOK:
		if rr.last {
			return 1, nil
		}
		return 0, nil
	case RenewalLost:
		return -1, nil
	}
	return 0, err
}

// leave ends field's acquisitions on every master (a quorum waiter is never
// queued, never handed a lock): it frees the lock where the field holds it
// and, on the masters that have not answered one of its acquisitions, raises
// its end latch. A master that fails is asked again in the background.
func (q *quorumStore) leave(ctx context.Context, m *Mutex, field string, _ bool, ttl time.Duration) (int64, bool, error) {
	return 0, false, q.leaveDirty(ctx, m, field, ttl, q.takeDirty(field))
}

// leaveDirty is leave with the masters that have not answered one of
// field's acquisitions, dirty (takeDirty's): a quorum semaphore leaves each
// of its permits with the one record of its field (quorumsem.go).
func (q *quorumStore) leaveDirty(ctx context.Context, m *Mutex, field string, ttl time.Duration, dirty []bool) error {
	if ttl == 0 {
		ttl = q.c.opts.watchdog
	}
	latch := q.latchFor(ttl)
	call := func(i int) scripts.Call {
		var guard time.Duration
		if dirty != nil && dirty[i] {
			guard = latch
		}
		return q.endCall(m, field, endAll, guard, true)
	}
	return q.everywhere(ctx, func(ctx context.Context, mb *member) error {
		end := call(mb.i)
		return mb.run(ctx, scripts.QuorumEnd, end.Keys, end.Args...).Err()
	}, func(mb *member) {
		mb.later(redo{s: scripts.QuorumEnd, call: call(mb.i), until: time.Now().Add(latch)})
	})
}

// forceUnlock runs forceunlock.lua on every master: true when any that
// answered had the lock. It returns once a majority answered.
func (q *quorumStore) forceUnlock(ctx context.Context, m *Mutex) (bool, error) {
	vals, err := quorumRead(ctx, q, func(ctx context.Context, mb *member) (int64, error) {
		return mb.run(ctx, scripts.ForceUnlock, m.fullKeys("force"), "publish", q.c.tokenTTLArg).Int64()
	}, nil)
	return slices.Contains(vals, 1), err
}
