package main

import "slices"

// What hand-off messages tell watch, and how they meet the polls: a
// message ("<field>|<token>|<previous holder>|<server µs>|<metadata>", from
// lockmw/internal/scripts/lib.lua's rlock_tell) names a hand-off exactly, at
// the server's time, before the poll that shows it; a read-write lock's
// names owners, not the writer's hash field.

// handoff reports a hand-off message "<field>|<token>|<previous holder>|<server
// µs>|…" (prev "" after a force unlock; atMS the server µs in ms, 0 when
// unknown): the script that released prev granted field, so the gap
// between them is 0. A read-write lock's message names owners; the holders
// are their hash fields (a writer's ends in ":write").
func (t *tracker) handoff(to, token, prev string, atMS int64) []event {
	to, prev = t.toField(to), t.fromField(prev)
	polled, ok := t.takeDeferred(to)
	if t.began.has(to) && !ok {
		return nil
	}
	t.began.mark(to, t.gen)
	if atMS > 0 {
		t.since[to] = atMS
	}
	if _, ok := t.holders[to]; !ok {
		t.holders[to] = -1 // its expiry is read by the next poll
	}
	t.told[to] = t.gen
	e := t.ev("handed_over", to)
	var gap int64
	e.From, e.GapMS, e.GapExact = prev, &gap, true
	if token != "0" {
		e.Token = token
	}
	if prev == "" {
		e.Detail = "after a force unlock"
	} else {
		if held := t.held(prev, atMS); atMS > 0 {
			e.HeldMS = held
		}
		t.ended.mark(prev, t.gen)
		delete(t.holders, prev)
	}
	if e.HeldMS == nil {
		e.HeldMS = polled.HeldMS // the poll that saw it first ended the giver's hold
	}
	return []event{e}
}

// A poll that sees a hand-off before its message arrives (the message is
// published by the script, the poll's reply may come first) defers it for
// patience polls: the message, when it comes, tells it exactly (gap 0);
// otherwise it is told as polled. A deferred hand-off is told before any
// later change, so the transcript stays in order.

// deferred is a hand-off a poll saw, and the observation it was seen at.
type deferred struct {
	e   event
	gen int
}

// takeDeferred takes the deferred hand-off to field, if any.
func (t *tracker) takeDeferred(field string) (event, bool) {
	for i, d := range t.deferred {
		if d.e.Field == field {
			t.deferred = slices.Delete(t.deferred, i, i+1)
			return d.e, true
		}
	}
	return event{}, false
}

// due returns the deferred hand-offs to tell now: all of them when others
// follow (now), else those that waited patience polls.
func (t *tracker) due(now bool) []event {
	var out []event
	keep := t.deferred[:0]
	for _, d := range t.deferred {
		if now && d.gen < t.gen || t.gen-d.gen >= t.patience {
			out = append(out, d.e)
		} else {
			keep = append(keep, d)
		}
	}
	t.deferred = keep
	return out
}

// flush returns every deferred hand-off (watch is ending).
func (t *tracker) flush() []event {
	out := make([]event, 0, len(t.deferred))
	for _, d := range t.deferred {
		out = append(out, d.e)
	}
	t.deferred = nil
	return out
}

// toField is the holder field of the waiter a hand-off message names: a
// read-write lock's writer's when its queue entry is the writer's, or when
// the writer holds already (a poll showed the hand-off, and the queue entry
// gone, before the message came).
func (t *tracker) toField(owner string) string {
	if t.kind == kindLock {
		return owner
	}
	w := owner + writeSuffix
	_, queued := t.queue[w]
	_, holds := t.holders[w]
	if queued || holds {
		return w
	}
	return owner
}

// fromField is the holder field of the previous holder a hand-off message
// names: a read-write lock's writer's when it held the write side (a
// writer hands over to every reader queued behind it, one message each).
func (t *tracker) fromField(owner string) string {
	w := owner + writeSuffix
	if _, ok := t.holders[w]; owner != "" && t.kind == kindRWLock && (ok || t.ended.has(w)) {
		return w
	}
	return owner
}

// settle matches the holders hand-off messages named with the holders of s:
// a read-write lock's message names the owner, without the writer's
// ":write", so that one it could not tell from the queue is the writer's
// field when s has that and not the owner's.
//
// A state that has neither (its poll was read before the hand-off's script
// ran, and its reply came after the message) keeps the holder told, for one
// more state: it is not gone (predates), whatever s says.
func (t *tracker) settle(s *state) {
	for f, gen := range t.told {
		w := f + writeSuffix
		hasF := slices.ContainsFunc(s.holders, func(h holder) bool { return h.Field == f })
		hasW := slices.ContainsFunc(s.holders, func(h holder) bool { return h.Field == w })
		if !hasF && !hasW && gen == t.gen {
			continue // s predates the message
		}
		delete(t.told, f)
		if s.kind != kindRWLock || hasF || !hasW {
			continue
		}
		t.holders[w], t.since[w] = t.holders[f], t.since[f]
		delete(t.holders, f)
		delete(t.since, f)
		t.began.mark(w, t.gen)
		delete(t.began, f)
	}
}
