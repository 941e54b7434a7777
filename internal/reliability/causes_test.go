package reliability_test

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// explainer tells why a recovery took as long as it did, from the records,
// the kills and the sampler's view of Redis.
type explainer struct {
	r        *run
	kills    map[int]time.Time // pid -> when it was killed
	smp      *sampler          // nil: no view of Redis
	driver   int               // the driver's pid
	timeout  time.Duration
	claimWin time.Duration
}

func newExplainer(r *run, kills []kill, smp *sampler, driver int, timeout time.Duration) *explainer {
	e := &explainer{r: r, kills: make(map[int]time.Time), smp: smp, driver: driver, timeout: timeout, claimWin: claimWindow(timeout)}
	for _, k := range kills {
		e.kills[k.pid] = k.at
	}
	return e
}

// pidOf returns the pid of the process whose client wrote field
// ("<clientID>:<ownerID>"), or 0.
func (e *explainer) pidOf(field string) int { return e.r.clients[clientOf(field)] }

// who names the process of field as it was at t: "pid N", "pid N (dead)"
// once killed, "the driver".
func (e *explainer) who(field string, t time.Time) string {
	pid := e.pidOf(field)
	switch {
	case pid == 0:
		return "unknown " + field
	case pid == e.driver:
		return "the driver"
	}
	if k, ok := e.kills[pid]; ok && !k.After(t) {
		return fmt.Sprintf("pid %d (dead)", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}

// dead reports whether field's process had been killed by t.
func (e *explainer) dead(field string, t time.Time) bool {
	k, ok := e.kills[e.pidOf(field)]
	return ok && !k.After(t)
}

// explain describes one recovery in a few lines: the killed hold and when
// its key could expire, the next hold, the processes that died waiting for
// the name, what Redis held from the kill to the next hold, and the causes
// of the delay it can tell. Times are from the kill.
func (e *explainer) explain(rc recovery) []string {
	k := rc.kill
	ms := func(t time.Time) string { return fmt.Sprintf("%+dms", t.Sub(k.at).Milliseconds()) }
	out := []string{
		fmt.Sprintf("%q acquired again %v after pid %d was killed at %s", rc.name, rc.took.Round(time.Millisecond), k.pid, k.at.Format("15:04:05.000")),
		"  killed hold: " + e.killedHold(rc.killed, ms),
		"  next hold: " + e.nextHold(rc.next, rc.killed.end, ms),
	}
	if dying := e.diedWaiting(rc, ms); dying != "" {
		out = append(out, "  died waiting for it: "+dying)
	}
	if e.smp == nil {
		return out
	}
	states := e.smp.between(rc.name, k.at, rc.next.start)
	stalls := e.smp.stallsIn(k.at, rc.next.start)
	out = append(out, e.timeline(states, stalls, ms)...)
	if causes := e.causes(rc, states, stalls); len(causes) > 0 {
		out = append(out, "  causes: "+strings.Join(causes, "; "))
	}
	return out
}

// killedHold describes the killed hold h.
func (e *explainer) killedHold(h *hold, ms func(time.Time) string) string {
	if h.phantom {
		return fmt.Sprintf("never logged; Redis gave it the name at %s at the latest (seen by the sampler), its request in flight at the kill", ms(h.start))
	}
	held := fmt.Sprintf("renewed %d times, the last sent at %s", h.renewals, ms(h.lastRenewal))
	switch {
	case h.renewals == 0 && h.waited:
		held = "waited and never renewed: its claim window may have been all it had"
	case h.renewals == 0:
		held = "never renewed"
	}
	return fmt.Sprintf("token %d, acquired %s (sent %s), %s; its key could expire from %s", h.token, ms(h.start), ms(h.sent), held, ms(h.end))
}

// nextHold describes n, the hold after one whose key could expire at expiry.
func (e *explainer) nextHold(n *hold, expiry time.Time, ms func(time.Time) string) string {
	late := n.start.Sub(expiry).Round(time.Millisecond)
	if n.phantom {
		return fmt.Sprintf("pid %d's, never logged: it was killed %s with its acquisition in flight, Redis held it from %s at the latest; %v after the earliest expiry",
			n.pid, ms(e.kills[n.pid]), ms(n.start), late)
	}
	how := "took it free"
	if n.waited {
		how = "waited (handed over or won on a retry)"
	}
	by := fmt.Sprintf("pid %d", n.pid)
	if n.pid == e.driver {
		by = "the driver"
	}
	return fmt.Sprintf("%s, token %d, last attempt sent %s, Lock returned %s, %s; %v after the earliest expiry", by, n.token, ms(n.sent), ms(n.start), how, late)
}

// diedWaiting names the processes killed while waiting for the name, whose
// queue entries may still have been there: an entry outlives its waiter's
// last attempt by the holder's TTL and a grace of one timeout.
func (e *explainer) diedWaiting(rc recovery, ms func(time.Time) string) string {
	var dying []string
	seen := make(map[int]bool)
	for _, c := range e.r.waiting {
		at, ok := e.kills[c.pid]
		if c.name != rc.name || !ok || !c.at.Before(at) || !at.Before(rc.next.start) || at.Before(rc.kill.at.Add(-3*e.timeout)) || seen[c.pid] {
			continue
		}
		seen[c.pid] = true
		dying = append(dying, fmt.Sprintf("pid %d (killed %s)", c.pid, ms(at)))
	}
	return strings.Join(dying, ", ")
}

// timeline is the states and stalls in time order, one line each.
func (e *explainer) timeline(states []lockState, stalls []stall, ms func(time.Time) string) []string {
	var out []string
	stallLine := func(st stall) string {
		return fmt.Sprintf("  %s to %s: no sample (the driver or redis-server did not run)", ms(st.from), ms(st.to))
	}
	si := 0
	for _, st := range states {
		for ; si < len(stalls) && stalls[si].from.Before(st.at); si++ {
			out = append(out, stallLine(stalls[si]))
		}
		out = append(out, "  "+ms(st.at)+": "+e.describe(st))
	}
	for ; si < len(stalls); si++ {
		out = append(out, stallLine(stalls[si]))
	}
	return out
}

// queueShown is how many queued waiters a state's description names.
const queueShown = 6

// describe says what one state held.
func (e *explainer) describe(st lockState) string {
	var b strings.Builder
	if len(st.holders) == 0 {
		b.WriteString("free")
	}
	for i, f := range st.holders {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "held by %s (ttl %v)", e.who(f, st.at), st.ttls[i])
	}
	if len(st.queue) > 0 {
		var q []string
		for i, f := range st.queue {
			if i == queueShown {
				q = append(q, fmt.Sprintf("%d more", len(st.queue)-i))
				break
			}
			q = append(q, e.who(f, st.at))
		}
		b.WriteString("; queue: " + strings.Join(q, ", "))
	}
	return b.String()
}

// causes names what held the recovery up after the killed hold's key could
// expire, with the time each took, longest first (see spans).
func (e *explainer) causes(rc recovery, states []lockState, stalls []stall) []string {
	total := make(map[string]time.Duration)
	var order []string
	for _, s := range e.spans(rc.kill.pid, rc.kill.at, rc.next, states, stalls) {
		if _, ok := total[s.text]; !ok {
			order = append(order, s.text)
		}
		total[s.text] += s.d
	}
	sort.SliceStable(order, func(i, j int) bool { return total[order[i]] > total[order[j]] })
	var out []string
	for _, w := range order {
		if total[w] >= time.Millisecond {
			out = append(out, fmt.Sprintf("%s %v", w, total[w].Round(time.Millisecond)))
		}
	}
	return out
}

// waitSpan is a stretch of a wait for a name and what filled it.
type waitSpan struct {
	kind string // one of the kinds below: what it was, whoever it was
	text string // the kind, with the process named
	d    time.Duration
}

// The kinds of spans.
const (
	spanStall      = "the machine stalled"
	spanFree       = "the name lay free (waiters asleep)"
	spanFreeAlone  = "the name lay free, nobody queued"
	spanVictim     = "the previous hold's key"
	spanInFlight   = "a hold won for a process killed with its request in flight"
	spanDeadWaiter = "a claim window handed to a dead waiter"
	spanUnlogged   = "a hold of a dead process it never logged"
	spanNext       = "the next hold, before it was logged"
	spanOther      = "a hold of a live process"
)

// spans divides the wait from from (a kill of pid, or a release by pid) to
// next's start among what Redis held meanwhile (states, sorted by time; the
// first is the state at from) and the sampler's stalls: the previous hold's
// key, holds of other dead processes (a hold won by a request in flight as
// its process died, a waiter handed the lock after it died, a hold its
// process never logged), holds of live processes that are not the next
// hold, and time the name lay free.
func (e *explainer) spans(pid int, from time.Time, next *hold, states []lockState, stalls []stall) []waitSpan {
	var out []waitSpan
	// Time in a stall is its own cause: nobody was served then.
	inStalls := func(from, to time.Time) time.Duration {
		var d time.Duration
		for _, st := range stalls {
			if a, b := later(from, st.from), earlier(to, st.to); b.After(a) {
				d += b.Sub(a)
			}
		}
		return d
	}
	queued := make(map[string]bool)
	prev := make(map[string]bool)
	for _, st := range states {
		for _, f := range st.holders {
			if e.pidOf(f) == pid && !st.at.After(from.Add(stateEvery)) {
				prev[f] = true // held by pid at from
			}
		}
	}
	for i, st := range states {
		end := next.start
		if i+1 < len(states) {
			end = states[i+1].at
		}
		begin := st.at
		if i == 0 {
			begin = from
		}
		stalled := inStalls(begin, end)
		out = append(out, waitSpan{spanStall, spanStall, stalled})
		s := waitSpan{d: end.Sub(begin) - stalled}
		switch {
		case len(st.holders) == 0 && len(st.queue) == 0:
			s.kind = spanFreeAlone
		case len(st.holders) == 0:
			s.kind = spanFree
		default:
			f, ttl := st.holders[0], st.ttls[0]
			who := e.who(f, begin)
			switch {
			case prev[f]:
				s.kind = spanVictim
			case e.dead(f, begin) && ttl > e.claimWin:
				s.kind, s.text = spanInFlight, fmt.Sprintf("a hold won for %s with its request in flight as it was killed", who)
			case e.dead(f, begin) && queued[f]:
				s.kind, s.text = spanDeadWaiter, fmt.Sprintf("a claim window handed to a dead waiter (%s)", who)
			case e.dead(f, begin):
				s.kind, s.text = spanUnlogged, fmt.Sprintf("a hold of %s it never logged", who)
			case e.pidOf(f) == next.pid:
				s.kind = spanNext
			default:
				s.kind, s.text = spanOther, fmt.Sprintf("a hold of %s", who)
			}
		}
		if s.text == "" {
			s.text = s.kind
		}
		for _, f := range st.queue {
			queued[f] = true
		}
		out = append(out, s)
	}
	return out
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
