package main

import (
	"fmt"
	"slices"
	"time"
)

// slackMS is how close to its expiry a holder that disappears is taken to
// have expired rather than been released.
const slackMS = 20

// event is one line of watch.
type event struct {
	Time  string `json:"time"` // when watch saw it (local clock)
	Name  string `json:"name"`
	Event string `json:"event"`
	Field string `json:"field,omitempty"` // the holder or waiter
	From  string `json:"from,omitempty"`  // handed_over: the previous holder
	Token string `json:"token,omitempty"` // the new hold's fencing token
	// TraceID is the trace ID of the metadata stored with the hold (the
	// field's), when watch has seen it.
	TraceID string `json:"trace_id,omitempty"`
	// GapMS, for handed_over, is how long the name was held by neither
	// between from's release and field's grant: 0 when a hand-off message
	// said one script did both (GapExact); else, seen by polling, at most
	// the time between the two polls that saw from and field hold.
	GapMS    *int64 `json:"gap_ms,omitempty"`
	GapExact bool   `json:"gap_exact,omitempty"`
	// HeldMS, for an end (released, lost, or handed_over's from), is how
	// long the hold lasted, from when watch saw it begin (a hand-off
	// message's server time, else the poll that first showed it) to its
	// end; absent for a hold already there when watch started.
	HeldMS *int64 `json:"held_ms,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Events: at start "free", "held" and "waiting" describe the state found;
// then "acquired", "released", "handed_over", "lost", "waiter_joined",
// "waiter_gave_up", and "waiter_left" where polling cannot tell giving up
// from holding the lock briefly between two polls.

// tracker turns successive states of a name, and hand-off messages, into
// events. A holder field is never given out twice, so each is reported
// beginning and ending once.
type tracker struct {
	name     string
	exact    bool             // hand-offs arrive as messages: a waiter that leaves without one gave up
	started  bool             // the first state was seen
	holders  map[string]int64 // believed holders → expiry in server ms (-1 never or unknown)
	queue    map[string]waiter
	began    marks             // reported as holding
	ended    marks             // reported as no longer holding
	gen      int               // how many states were observed
	handoffs int64             // the last hold's rlock:handoffs
	expired  bool              // a keyspace event said the key expired
	kind     string            // the last state's kind
	lastMS   int64             // the last state's server time
	meta     map[string]string // the believed holders' metadata, as last seen
	told     map[string]int    // holders a hand-off message named, not yet seen by a poll: the observation it came at
	since    map[string]int64  // when (server ms) watch saw a holder begin
	deferred []deferred        // hand-offs a poll saw, waiting for their messages
	patience int               // how many polls a deferred hand-off waits
	now      func() time.Time
}

// newTracker returns a tracker of name.
func newTracker(name string, exact bool) *tracker {
	return &tracker{
		name: name, exact: exact, holders: map[string]int64{}, queue: map[string]waiter{},
		began: marks{}, ended: marks{}, meta: map[string]string{}, told: map[string]int{},
		since: map[string]int64{}, patience: 1, now: time.Now,
	}
}

// ev returns an event of kind about field.
func (t *tracker) ev(kind, field string) event {
	return event{Time: t.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Name: t.name, Event: kind, Field: field}
}

// observe compares s with what was seen before and returns the changes.
func (t *tracker) observe(s *state) []event { return t.observeAfter(s, nil) }

// observeAfter is observe when the hand-off messages taken in since the
// last state told handed (handoff's events): a holder s no longer has that
// no message named ended before them (a read-write lock's writer is handed
// the lock when its last reader leaves, the others left before), so its
// end is told first, at the first hand-off's time.
func (t *tracker) observeAfter(s *state, handed []event) []event {
	var evs []event
	if !t.started {
		evs = append(t.initial(s), handed...)
	} else {
		t.settle(s)
		gone := t.gone(s)
		began := t.newHolders(s, gone) // first: a hand-off ends its giver
		for _, f := range gone {
			if !t.ended.has(f) {
				e := t.end(f, s)
				if len(handed) > 0 {
					e.Time = handed[0].Time // over by then: the lines keep their order in time
				}
				evs = append(evs, e)
			}
		}
		evs = append(append(append(evs, handed...), began...), t.waiterChanges(s)...)
		evs = append(t.due(len(evs) > 0), evs...)
	}
	t.remember(s)
	return evs
}

// initial describes the state watch starts from.
func (t *tracker) initial(s *state) []event {
	t.started = true
	var evs []event
	for _, h := range s.holders {
		e := t.ev("held", h.Field)
		e.Token, e.Detail, e.TraceID = s.lock.token, expiresIn(s, h.ExpiresMS), traceID(h.Meta)
		evs = append(evs, e)
		t.began.mark(h.Field, t.gen)
	}
	if len(evs) == 0 {
		e := t.ev("free", "")
		e.Detail = s.why
		evs = append(evs, e)
	}
	for _, w := range s.waiters {
		e := t.ev("waiting", w.Field)
		e.Detail = entryExpires(w)
		evs = append(evs, e)
	}
	return evs
}

// gone returns the believed holders that s no longer has, sorted; a holder
// a hand-off message named since s was read (settle kept it told) is not.
func (t *tracker) gone(s *state) []string {
	var out []string
	for f := range t.holders {
		if _, told := t.told[f]; told {
			continue
		}
		if !slices.ContainsFunc(s.holders, func(h holder) bool { return h.Field == f }) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// newHolders reports the holders of s not seen before: handed over when the
// hold came by a hand-off (rlock:handoffs) or a queued waiter got a permit
// or a read-write lock, else acquired.
func (t *tracker) newHolders(s *state, gone []string) []event {
	var evs []event
	for _, h := range s.holders {
		if _, ok := t.holders[h.Field]; ok || t.began.has(h.Field) {
			continue
		}
		t.began.mark(h.Field, t.gen)
		t.since[h.Field] = s.nowMS
		_, queued := t.queue[h.Field]
		handed := s.kind == kindLock && s.lock.handoffs > 0 || s.kind != kindLock && queued
		if !handed {
			e := t.ev("acquired", h.Field)
			e.Token, e.Detail, e.TraceID = s.lock.token, expiresIn(s, h.ExpiresMS), traceID(h.Meta)
			evs = append(evs, e)
			continue
		}
		e := t.ev("handed_over", h.Field)
		gap := s.nowMS - t.lastMS
		e.Token, e.TraceID, e.GapMS = s.lock.token, traceID(h.Meta), &gap
		if from := t.unended(gone); len(from) == 1 {
			e.From, e.HeldMS = from[0], t.held(from[0], s.nowMS)
			t.ended.mark(from[0], t.gen)
		}
		if n := s.lock.handoffs - t.handoffs; s.kind == kindLock && t.handoffs < s.lock.handoffs && n > 1 {
			e.Detail = fmt.Sprintf("%d hand-offs since the last poll; those between were not seen", n)
		}
		if t.exact { // its message may be on its way: it names the hand-off exactly
			t.deferred = append(t.deferred, deferred{e, t.gen})
			continue
		}
		evs = append(evs, e)
	}
	return evs
}

// unended returns the fields of gone not yet reported ended.
func (t *tracker) unended(gone []string) []string {
	var out []string
	for _, f := range gone {
		if !t.ended.has(f) {
			out = append(out, f)
		}
	}
	return out
}

// end reports that holder f no longer holds: lost when it reached its
// expiry (or a keyspace event said the key expired), else released.
func (t *tracker) end(f string, s *state) event {
	t.ended.mark(f, t.gen)
	exp := t.holders[f]
	expired := slices.ContainsFunc(s.expired, func(h holder) bool { return h.Field == f })
	kind, detail := "released", ""
	if t.expired || expired || exp >= 0 && exp <= s.nowMS+slackMS {
		kind, detail = "lost", "its TTL ran out"
	}
	e := t.ev(kind, f)
	e.Detail, e.TraceID, e.HeldMS = detail, traceID(t.meta[f]), t.held(f, s.nowMS)
	return e
}

// held is how long f held until endMS (server ms), as watch saw it; nil
// when watch did not see it begin. It forgets f.
func (t *tracker) held(f string, endMS int64) *int64 {
	begin, ok := t.since[f]
	delete(t.since, f)
	if !ok {
		return nil
	}
	d := max(endMS-begin, 0)
	return &d
}

// waiterChanges reports waiters that joined or left the queue.
func (t *tracker) waiterChanges(s *state) []event {
	var evs []event
	now := map[string]bool{}
	for _, w := range s.waiters {
		now[w.Field] = true
		if _, ok := t.queue[w.Field]; !ok && !t.began.has(w.Field) {
			e := t.ev("waiter_joined", w.Field)
			e.Detail = entryExpires(w)
			evs = append(evs, e)
		}
	}
	for _, f := range sortedKeys(t.queue) {
		w := t.queue[f]
		if now[f] || t.began.has(f) {
			continue
		}
		switch {
		case w.DeadlineMS > 0 && w.DeadlineMS <= s.nowMS:
			e := t.ev("waiter_gave_up", f)
			e.Detail = "its queue entry expired"
			evs = append(evs, e)
		case t.exact:
			evs = append(evs, t.ev("waiter_gave_up", f))
		default:
			e := t.ev("waiter_left", f)
			e.Detail = "gave up, or held the lock and released it between two polls"
			evs = append(evs, e)
		}
	}
	return evs
}

// remember keeps s as the last state seen.
func (t *tracker) remember(s *state) {
	t.holders, t.meta = map[string]int64{}, map[string]string{}
	for _, h := range s.holders {
		t.holders[h.Field], t.meta[h.Field] = h.ExpiresMS, h.Meta
	}
	for f := range t.told { // named by a message s predates: still a holder
		if _, ok := t.holders[f]; !ok {
			t.holders[f] = -1
		}
	}
	t.kind, t.lastMS = s.kind, s.nowMS
	t.queue = map[string]waiter{}
	for _, w := range s.waiters {
		t.queue[w.Field] = w
	}
	t.handoffs, t.expired = s.lock.handoffs, false
	t.gen++
	t.began.prune(t.gen, t.current)
	t.ended.prune(t.gen, t.current)
}

// current reports whether f is a holder or waiter of the last state.
func (t *tracker) current(f string) bool {
	_, held := t.holders[f]
	_, queued := t.queue[f]
	return held || queued
}

// marks remembers fields already reported, with the observation they were
// last marked at. A field is never given out twice, so once it has left
// the state for a few observations it cannot come back: forgetting it then
// keeps a long watch of a busy lock in bounded memory.
type marks map[string]int

// mark records f at observation gen.
func (m marks) mark(f string, gen int) { m[f] = gen }

// has reports whether f is marked.
func (m marks) has(f string) bool {
	_, ok := m[f]
	return ok
}

// prune forgets the fields marked more than two observations before gen
// that are no longer current.
func (m marks) prune(gen int, current func(string) bool) {
	for f, g := range m {
		if g < gen-2 && !current(f) {
			delete(m, f)
		}
	}
}

// expiresIn describes when a holder expires.
func expiresIn(s *state, expMS int64) string {
	if expMS < 0 {
		return "no expiry"
	}
	return "expires in " + expiresNote(expMS-s.nowMS)
}

// entryExpires describes when a waiter's queue entry expires.
func entryExpires(w waiter) string {
	return "queue entry expires " + msTime(w.DeadlineMS)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
