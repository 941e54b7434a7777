package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
)

// expiryTolerance is taken off a killed hold's earliest expiry: the renewal
// send time a Renewal hook reconstructs (now minus the script's duration)
// can be microseconds late, and Redis keeps TTLs in whole milliseconds.
const expiryTolerance = time.Millisecond

// kill is a SIGKILL the driver sent.
type kill struct {
	pid int
	at  time.Time // right after kill(2) returned
}

// hold is one hold of a name by one process, assembled from its records.
type hold struct {
	pid         int
	name        string
	token       int64
	start       time.Time // Start record: Lock returned
	begin       time.Time // Start record: Lock was called
	sent        time.Time // Start record: last request sent by Lock
	end         time.Time // End record, or the killed hold's earliest expiry
	lastRenewal time.Time
	renewals    int
	renewedAt   []time.Time   // every renewal's send, in log order
	settledAt   []time.Time   // and when its reply was in (its Renewal hook ran; zero: not logged)
	goneAt      []goneRenewal // renewals that found the hold gone
	lost        time.Time     // Lost record: when the loss was noticed
	dropped     time.Time     // Dropped record: when lockmw ended the hold as lost
	hasStart    bool
	waited      bool // the acquisition waited: maybe handed over with a claim window
	hasEnd      bool
	killed      bool   // the process was killed with the hold open
	outlived    bool   // ended past its key's earliest expiry, paused or lost at Unlock: end is that expiry
	field       string // its field in Redis, when the Start record says
	phantom     bool   // not logged: Redis held it for a process already killed (see addPhantoms)
}

func (h *hold) isLost() bool { return !h.lost.IsZero() }

// goneRenewal is a renewal attempt that found its hold gone: sent, and its
// reply in by replied (when its Renewal hook ran).
type goneRenewal struct{ sent, replied time.Time }

func (h *hold) String() string {
	return fmt.Sprintf("pid %d token %d [%s, %s]", h.pid, h.token, h.start.Format("15:04:05.000000"), h.end.Format("15:04:05.000000"))
}

// crashReport is what the checker found.
type crashReport struct {
	Processes      int
	Acquisitions   int
	Renewals       int
	Lost           int
	LateNotices    int             // lost holds whose loss was noticed after the next holder began
	Kills          int             // SIGKILLs sent
	KillsHolding   int             // of them, while the process held at least one lock
	recoveryStats                  // names freed by a kill, measured
	OutlivedHolds  int             // holds that ended past their key's earliest expiry, paused or lost at Unlock (see assemble)
	Phantoms       int             // holds never logged, of processes killed with the acquisition in flight (see addPhantoms)
	UnlockTimeouts int             // Unlocks that timed out while a reply on their name was lost
	FaultFails     int             // failed calls within a fault of a server or a proxy (see judgeFails)
	TimerLosses    int             // Unlocks that reported a loss made by lockmw's loss timer before the key's earliest expiry but within lockmw's bound (see judgeFails)
	MinSlack       time.Duration   // next acquisition - earliest expiry of a killed hold
	SharedOverlaps int             // shared holds that began while another shared hold of the name lasted
	Handoffs       []time.Duration // end of a released hold -> start of the next, when it was waiting then (Lock called before the release), sorted
	SlowHandoffs   int             // of them, longer than half the timeout
	SlowAfterKill  time.Duration   // the longest time from a kill to a slow hand-off's release
	Violations     []string

	slow []handoff // the hand-offs that took longer than a claim window
	run  *run
}

// recoveryStats are the recoveries a check measured: kill -> next
// acquisition of a name the victim held.
type recoveryStats struct {
	Recoveries    int
	LostReplies   int // of them, with a reply on the name lost between the kill and the recovery
	Stalled       int // of them, with a stall of the driver or Redis between the kill and the recovery
	Faulted       int // of them, with a fault of a server or a proxy between the kill and the recovery
	WorstRecovery time.Duration
	recovered     []recovery // every recovery measured, slowest first
}

// measure records the recovery by next of the name of h, held by the
// process killed by k, and reports whether it came within recoveryBound
// (the bound it was judged against). The stalls that extend the bound are
// the sampler's (the driver's or Redis's) and the pauses next's process
// logged in between (it did not run: a loaded machine starves workers too).
func (s *recoveryStats) measure(k kill, h, next *hold, timeout time.Duration, obs observed, r *run) (time.Duration, bool) {
	rec := next.start.Sub(k.at)
	dropped := dropsOn(obs, h.name, k.at, next.start)
	stalled := max(stalledIn(obs, k.at, next.start), starvedIn(obs, k.at, next.start)) + r.pauseTime(next.pid, k.at, next.start)
	if stalled > 0 {
		s.Stalled++
	}
	faulted := faultedIn(obs, k.at, next.start)
	if faulted > 0 {
		s.Faulted++
	}
	if dropped > 0 {
		s.LostReplies++
	}
	s.Recoveries++
	s.WorstRecovery = max(s.WorstRecovery, rec)
	s.recovered = append(s.recovered, recovery{name: h.name, kill: k, killed: h, next: next, took: rec})
	bound := recoveryBound(timeout, dropped, stalled+faulted)
	return bound, rec <= bound
}

// handoff is a released hold of a name and the next hold.
type handoff struct {
	name       string
	prev, next *hold
}

// recovery is one name a kill left held by the dead process, and when it
// was acquired again.
type recovery struct {
	name   string
	kill   kill
	killed *hold // the victim's hold of the name
	next   *hold // the next hold to start after the kill
	took   time.Duration
}

// run is every hold of a run, assembled from the records of every process.
type run struct {
	processes    int
	acquisitions int
	renewals     int
	lost         int
	byName       map[string][]*hold // holds that started, sorted by start
	openAtKill   map[int][]*hold    // holds open when their process was killed, by pid
	clients      map[string]int     // lockmw client ID -> pid, from the Hello records
	waiting      []call             // Lock calls that never returned: cut short by a kill or the end
	holds        map[holdKey]*hold
	fails        []reliability.Record
	pauses       map[int][]pause // by pid, in time order
	outlived     int             // holds cut at their key's earliest expiry (see assemble)
	faultFails   int             // failed calls excused by a fault of a server or a proxy (judgeFails)
	timerLosses  int             // Unlocks that reported a loss lockmw's loss timer made before the key's earliest expiry, within its bound (judgeFails)
	violations   []string
}

// pause is a time a process did not run (a Pause record).
type pause struct{ from, to time.Time }

// call is a Lock call that began (a Call record).
type call struct {
	pid  int
	name string
	at   time.Time
}

func (r *run) violate(format string, a ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, a...))
}

// assemble builds the holds of a run from its records and the driver's
// kills; timeout is the watchdog timeout. A hold open when its process was
// killed ends at the earliest moment its key could have expired. So does a
// hold whose end line came after that moment when its process logged a pause
// between the two (it did not run, so neither its renewals nor its loss timer
// did: a paused holder, which only fencing protects, docs/reliability.md), or
// when its Unlock returned ErrLockLost (lockmw cancels the hold context from
// a timer at that moment; a critical section that ended just then, on a
// loaded machine, learns of the loss at Unlock). Either way the hold counts
// as lost when it could first have been; a hold that started before still
// overlaps it. It reports records that make no sense and holds that never
// ended in a process that was not killed.
func assemble(recs []reliability.Record, kills []kill, timeout time.Duration) *run {
	r := &run{byName: make(map[string][]*hold), openAtKill: make(map[int][]*hold), clients: make(map[string]int), pauses: make(map[int][]pause)}
	killedAt := make(map[int]time.Time)
	for _, k := range kills {
		killedAt[k.pid] = k.at
	}
	holds, pids := r.collect(recs)
	r.holds = holds
	r.processes = len(pids)
	lostAtUnlock := make(map[holdKey]bool)
	for _, f := range r.fails {
		if isUnlockLost(f) {
			lostAtUnlock[holdKey{f.Pid, f.Name, f.Token}] = true
		}
	}
	for _, h := range holds {
		if !h.hasStart {
			if h.hasEnd || h.isLost() {
				r.violate("%q: pid %d token %d ended but never started", h.name, h.pid, h.token)
			}
			continue // a renewal logged in the instant between the hold's start and its Start line
		}
		r.acquisitions++
		r.judgeGone(h, timeout)
		if h.token == 0 {
			r.violate("%q: pid %d has no token", h.name, h.pid)
		}
		if h.isLost() {
			r.lost++
		}
		if !h.hasEnd && !h.isLost() {
			if _, killed := killedAt[h.pid]; !killed {
				r.violate("%q: pid %d token %d never ended, and the process was not killed", h.name, h.pid, h.token)
				continue
			}
			// The key got its TTL no earlier than the acquire or the last
			// renewal was sent, so it cannot have expired before this. A
			// hold handed over and not claimed (renewed) yet had only its
			// claim window: the holder claims it a third of the way in, so
			// a kill may come first (docs/waiting.md).
			h.killed = true
			h.end = h.expiry(timeout)
			r.openAtKill[h.pid] = append(r.openAtKill[h.pid], h)
		}
		if x := h.expiry(timeout); h.hasEnd && !h.isLost() && h.end.After(x) && (r.pausedIn(h.pid, x, h.end) || lostAtUnlock[holdKey{h.pid, h.name, h.token}]) {
			h.end, h.outlived = x, true
			r.outlived++
		}
		r.byName[h.name] = append(r.byName[h.name], h)
	}
	for _, hs := range r.byName {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
	}
	return r
}

// judgeGone reports every renewal of h that found the hold gone before its
// key could have expired (h.expiryBefore its send) and before h's End
// record (after it, the release may have run first) or its Lost record
// (after it, the Unlock of a multi-lock whose other member was lost
// released this one): lockmw lost the hold early. Call it before assemble
// cuts h.end.
func (r *run) judgeGone(h *hold, timeout time.Duration) {
	for _, g := range h.goneAt {
		if x := h.expiryBefore(g.sent, timeout); g.replied.Before(x) && (!h.hasEnd || g.replied.Before(h.end)) && (!h.isLost() || g.replied.Before(h.lost)) {
			r.violate("%q: pid %d token %d: a renewal found the hold gone %v before its key could have expired", h.name, h.pid, h.token, x.Sub(g.replied))
		}
	}
}

// lossCut is when a lost hold stopped excluding others at the latest, as
// porcupine's model has it (linearOps): at its key's earliest expiry,
// counting only the renewals sent before the loss was noticed, or at its
// release, whichever came first — its End record or, without one, its Lost
// record (the worker's Unlock after the loss releases what is still held).
// Another hold that began before then overlaps it: the key cannot have
// expired yet, so something removed it.
func (h *hold) lossCut(timeout time.Duration) time.Time {
	release := h.lost
	if h.hasEnd {
		release = h.end
	}
	return earlier(h.expiryBefore(h.lost, timeout), release)
}

// excludesUntil is when h stopped excluding others: its end, or for a lost
// hold its lossCut.
func (h *hold) excludesUntil(timeout time.Duration) time.Time {
	if h.isLost() {
		return h.lossCut(timeout)
	}
	return h.end
}

// describe is h's String, a lost hold's with the end that exclusion judges.
func (h *hold) describe(timeout time.Duration) string {
	if !h.isLost() {
		return h.String()
	}
	return fmt.Sprintf("pid %d token %d [%s, lost: excluding until %s]", h.pid, h.token, h.start.Format("15:04:05.000000"), h.lossCut(timeout).Format("15:04:05.000000"))
}

// expiryBefore is h.expiry counting only the renewals sent before at.
func (h *hold) expiryBefore(at time.Time, timeout time.Duration) time.Time {
	var last time.Time
	for _, s := range h.renewedAt {
		if s.Before(at) && s.After(last) {
			last = s
		}
	}
	ttl := timeout
	if h.waited && last.IsZero() {
		ttl = claimWindow(timeout)
	}
	return later(h.sent, last).Add(ttl - expiryTolerance)
}

// expiry is the earliest moment h's key could have expired unrenewed: the
// key got its TTL no earlier than the acquire or the last renewal was sent.
// A hold handed over and not claimed (renewed) yet had only its claim
// window: the holder claims it a third of the way in, so a kill or a pause
// may come first (docs/waiting.md).
func (h *hold) expiry(timeout time.Duration) time.Time {
	ttl := timeout
	if h.waited && h.lastRenewal.IsZero() {
		ttl = claimWindow(timeout)
	}
	return later(h.sent, h.lastRenewal).Add(ttl - expiryTolerance)
}

// inFlight is how near its process's kill a hold the process never logged
// may be seen in Redis and count as the process's: an acquisition whose
// request was sent before the kill runs when the server reads it, after
// the sender died, and one that won just before the kill was not logged
// yet. A field of a dead process first seen holding later than this after
// the kill, or first seen with no more than a claim window of TTL, was
// handed over to a dead waiter: no acquisition, and no recovery of anything.
func inFlight(timeout time.Duration) time.Duration { return timeout / 3 }

// addPhantoms adds to the run the holds that Redis held for a process around
// its kill (obs.holders) but that the process never logged: it died with
// the acquisition in flight (see inFlight). On a quorum only a field seen on
// a majority of the masters held the name: one seen on fewer was a partial
// win of a split vote (quorumsplit.go), which its attempt undoes or, killed,
// leaves to expire, while the others win the name on the other masters. Such a hold counts as the name's
// acquisition for an earlier kill's recovery, and as a hold open at its own
// process's kill, whose recovery is measured from that kill. Phantoms have
// no critical section: the checks of exclusion and fencing leave them out.
func (r *run) addPhantoms(obs observed, kills []kill, timeout time.Duration) int {
	if obs == nil {
		return 0
	}
	killedAt := make(map[int]time.Time)
	for _, k := range kills {
		killedAt[k.pid] = k.at
	}
	logged := make(map[string]bool)
	for _, hs := range r.byName {
		for _, h := range hs {
			logged[h.field] = true
		}
	}
	n := 0
	for name, hs := range r.byName {
		for _, sh := range obs.holders(name) {
			pid := r.clients[clientOf(sh.field)]
			k, ok := killedAt[pid]
			if logged[sh.field] || !ok || sh.partial || sh.at.Before(k.Add(-inFlight(timeout))) || sh.at.After(k.Add(inFlight(timeout))) ||
				sh.ttl <= claimWindow(timeout) {
				continue
			}
			h := &hold{pid: pid, name: name, start: sh.at, sent: sh.at, end: sh.at, field: sh.field,
				hasStart: true, killed: true, phantom: true}
			hs = append(hs, h)
			r.openAtKill[pid] = append(r.openAtKill[pid], h)
			n++
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
		r.byName[name] = hs
	}
	return n
}

// clientOf is the client ID of a field "<clientID>:<ownerID>".
func clientOf(field string) string {
	if i := strings.LastIndexByte(field, ':'); i >= 0 {
		return field[:i]
	}
	return field
}

// notRunning reports whether process pid was seen not to run at the
// instant at: a pause it logged, or, for the driver, a time its sampler
// heard nothing (it runs in the driver's process). A hold's start is logged
// when Lock returns; a process that did not run between winning the lock and
// logging it logs its start after the next holds', whose tokens are greater:
// the order of the starts is then not the order of the acquisitions, and
// the hold is a paused holder's (only fencing protects what it writes).
func (r *run) notRunning(obs observed, pid int, at time.Time) bool {
	if r.pausedIn(pid, at, at) {
		return true
	}
	return pid == driverProc && obs != nil && obs.stalledIn(at.Add(-time.Millisecond), at.Add(time.Millisecond)) > 0
}

// pausedIn reports whether process pid logged a pause overlapping
// [from, to].
func (r *run) pausedIn(pid int, from, to time.Time) bool {
	for _, p := range r.pauses[pid] {
		if p.to.After(from) && p.from.Before(to) {
			return true
		}
	}
	return false
}

// collect reads the records into holds, keyed by process, name and token,
// and returns the pids that said hello.
func (r *run) collect(recs []reliability.Record) (map[holdKey]*hold, map[int]bool) {
	holds := make(map[holdKey]*hold)
	get := func(rc reliability.Record) *hold {
		k := holdKey{rc.Pid, rc.Name, rc.Token}
		h := holds[k]
		if h == nil {
			h = &hold{pid: rc.Pid, name: rc.Name, token: rc.Token}
			holds[k] = h
		}
		return h
	}
	pids := make(map[int]bool)
	calls := make(map[call]bool) // open: no Start yet
	for _, rc := range recs {
		switch rc.Kind {
		case reliability.Hello:
			pids[rc.Pid] = true
			r.clients[rc.Note] = rc.Pid
		case reliability.Call:
			calls[call{rc.Pid, rc.Name, rc.Time}] = true
		case reliability.Start:
			delete(calls, call{rc.Pid, rc.Name, rc.Begin})
			h := get(rc)
			if h.hasStart {
				r.violate("%q: token %d handed out twice to pid %d", rc.Name, rc.Token, rc.Pid)
			}
			h.hasStart, h.start, h.sent, h.begin = true, rc.Time, rc.Sent, rc.Begin
			h.field, h.waited = reliability.ParseStartNote(rc.Note)
			if h.sent.IsZero() {
				h.sent = rc.Begin
			}
		case reliability.End:
			h := get(rc)
			h.hasEnd, h.end = true, rc.Time
		case reliability.Renew:
			if rc.Token == 0 { // its hold cannot be told: a killed hold's expiry would be too early
				r.violate("%q: pid %d renewed a hold with no token", rc.Name, rc.Pid)
			}
			h := get(rc)
			if rc.Note == reliability.RenewLostNote && !rc.Begin.IsZero() {
				h.goneAt = append(h.goneAt, goneRenewal{rc.Time, rc.Begin})
			}
			if rc.Note != "" { // an attempt that did not extend the hold
				break
			}
			h.renewedAt = append(h.renewedAt, rc.Time)
			h.settledAt = append(h.settledAt, rc.Begin)
			h.renewals++
			r.renewals++
			if rc.Time.After(h.lastRenewal) {
				h.lastRenewal = rc.Time
			}
		case reliability.Lost:
			get(rc).lost = rc.Time
		case reliability.Dropped:
			if h := get(rc); h.dropped.IsZero() {
				h.dropped = rc.Time
			}
		case reliability.Fail:
			r.fails = append(r.fails, rc)
		case reliability.Pause:
			r.pauses[rc.Pid] = append(r.pauses[rc.Pid], pause{rc.Begin, rc.Time})
		default:
			r.violate("pid %d: unknown record kind %q", rc.Pid, rc.Kind)
		}
	}
	for c := range calls {
		r.waiting = append(r.waiting, c)
	}
	sort.Slice(r.waiting, func(i, j int) bool { return r.waiting[i].at.Before(r.waiting[j].at) })
	return holds, pids
}

type holdKey struct {
	pid   int
	name  string
	token int64
}

// observed is what the driver saw of a run besides the records.
type observed interface {
	// dropsOn counts the replies of commands on a lock name that the
	// network lost in (from, to) (netFaults).
	dropsOn(name string, from, to time.Time) int
	// stalledIn is how long, within [from, to], the driver heard nothing
	// from Redis (sampler.stalls): the driver's waiter or redis-server did
	// not run, so nobody could be served for certain.
	stalledIn(from, to time.Time) time.Duration
	// starvedIn is how long, within [from, to], some task of the machine
	// waited for a CPU (sampler.starvedIn): the longest any process of the
	// run can have been kept from running there, in many short waits that
	// no stall shows.
	starvedIn(from, to time.Time) time.Duration
	// holders is every field seen holding a name, and when first seen.
	holders(name string) []seenHolder
	// faultedIn is how much of [from, to] the faults the driver struck a
	// server or a proxy with (a pause or a restart of Redis, latency, lost
	// replies or a black hole) cover, each with its grace (faultGrace).
	faultedIn(from, to time.Time) time.Duration
}

// recoveryBound is how long after a kill a name the victim held must be
// acquired again: its key expires at most the watchdog timeout after the
// last renewal before the kill, plus one renewal interval of slack (for
// a renewal in flight, the waiters' round trips and a loaded machine). Each
// reply on the name lost in between may cost one more timeout (the client
// that won the name did not hear it; the key it got expires unrenewed), and
// a stall of the driver, whose waiter is always there, or of redis-server
// costs its length, or, when longer, the time some task of the machine
// waited for a CPU (a starved machine slows every step of the recovery a
// little, in waits too short for a stall: it covers the stalls it caused),
// and so does a fault of a server or a proxy with its grace (stalled counts
// them all): the bound is judged against what the run observed.
func recoveryBound(timeout time.Duration, lost int, stalled time.Duration) time.Duration {
	return timeout + timeout/3 + time.Duration(lost)*timeout + stalled
}

// lossTimerNote is what the cause of a hold lockmw's loss timer ended says:
// no renewal was confirmed until its key could have expired.
const lossTimerNote = "failed until the key could have expired"

// lossAt is when lockmw ended h as lost, for the Unlock f that reported it:
// its Dropped record, or f's return when there is none.
func lossAt(h *hold, f reliability.Record) time.Time {
	if !h.dropped.IsZero() && !h.dropped.After(f.Time) {
		return h.dropped
	}
	return f.Time
}

// stampSlack is how much earlier than the send the recorder saw lockmw may
// have read its clock for an acquisition's attempt without the process
// logging a pause: the worker's pause watch logs stalls over 50 ms.
const stampSlack = 50 * time.Millisecond

// lossBound is the earliest moment lockmw's loss timer may end h, judged
// at at (lossAt). lockmw counts a renewal only once its reply is in
// (settledAt), and ends a hold at its key's earliest expiry by its own
// clock less its drift margin (a hundredth of the TTL and 2 ms,
// lockmw's expiryBound), from the clock reading it took before sending:
// for a renewal, the send logged; for the acquisition, as much as
// stampSlack and early before the send the recorder saw, but not before
// Lock was called. early is the process's pauses in the call, and the time
// Redis or the machine stalled in it (sendDelay): lockmw's batcher sends a
// call that finds a round trip under way when that round trip returns, as
// late as a stall makes it. A renewal whose reply came after at, on a
// machine that ran the renewer late, counts toward the key's expiry
// (h.expiry) but not toward lockmw's loss: lockmw could not know of it.
func (h *hold) lossBound(at time.Time, timeout, early time.Duration) time.Time {
	var last time.Time
	for i, s := range h.renewedAt {
		settled := s
		if i < len(h.settledAt) && !h.settledAt[i].IsZero() {
			settled = h.settledAt[i]
		}
		if settled.Before(at) && s.After(last) {
			last = s
		}
	}
	ttl := timeout
	if h.waited && last.IsZero() {
		ttl = claimWindow(timeout)
	}
	base := h.sent.Add(-stampSlack - early)
	if !h.begin.IsZero() {
		base = later(base, h.begin)
	}
	return later(base, last).Add(ttl - ttl/100 - 2*time.Millisecond - expiryTolerance)
}

// sendDelay is how much later than lockmw read its clock the last request
// of h's acquisition may have been sent, beyond stampSlack: the sampler's
// stalls in the call, or the time a task waited for a CPU when longer (as
// recoveryBound counts them).
func sendDelay(obs observed, h *hold) time.Duration {
	from := h.begin
	if from.IsZero() {
		from = h.sent
	}
	return max(stalledIn(obs, from, h.sent), starvedIn(obs, from, h.sent))
}

// pauseTime is how long pid logged pauses within (from, to).
func (r *run) pauseTime(pid int, from, to time.Time) time.Duration {
	var d time.Duration
	for _, p := range r.pauses[pid] {
		if p.to.After(from) && p.from.Before(to) {
			d += earlier(p.to, to).Sub(later(p.from, from))
		}
	}
	return d
}

// isUnlockLost reports whether f is the Fail record of an Unlock that
// returned ErrLockLost.
func isUnlockLost(f reliability.Record) bool {
	return f.Kind == reliability.Fail && strings.HasPrefix(f.Note, reliability.UnlockFailedNote) &&
		strings.Contains(f.Note, lockmw.ErrLockLost.Error())
}

// judgeFails reports every failed call as a violation but two kinds of
// failed Unlock: one that timed out while the network lost a reply of a
// command on its name, or while Redis or the process stalled (a sampler's
// stall or a pause of the process), which is Unlock's contract (it gives
// up after the release timeout; the lock is released or expires); and
// ErrLockLost from an Unlock that returned after the hold's key could first
// have expired (h.expiry; a hold that ended past it is cut there, see
// assemble): lockmw told the truth, and a critical section that ended
// before stays whole. ErrLockLost from an Unlock that returned before the
// key could expire is a violation. Within a fault of a server or a proxy
// (faultedIn, with its grace) a failed Lock and a failed Unlock are no
// violation either (Redis did not answer, or answered what the client never
// heard; counted in r.faultFails), but for an Unlock that returned
// ErrLockLost before the key could expire (with appendfsync always a
// restarted server kept the key: lost early is lost early) and an Unlock
// after a loss that did not return ErrLockLost (that needs no server). It
// returns how many Unlocks timed out.
func (r *run) judgeFails(obs observed, timeout time.Duration) int {
	timedOut := 0
	for _, f := range r.fails {
		h := r.holds[holdKey{f.Pid, f.Name, f.Token}]
		unlock := h != nil && h.hasEnd && strings.HasPrefix(f.Note, reliability.UnlockFailedNote)
		switch {
		case faultedIn(obs, f.Time.Add(-time.Millisecond), f.Time) > 0 && !isUnlockLost(f) && !strings.HasPrefix(f.Note, reliability.UnlockAfterLossNote):
			r.faultFails++
		case unlock && strings.HasSuffix(f.Note, context.DeadlineExceeded.Error()) &&
			(dropsOn(obs, f.Name, h.end, f.Time) > 0 || stalledIn(obs, h.end, f.Time) > 0 || r.pausedIn(f.Pid, h.end, f.Time)):
			timedOut++
		case unlock && isUnlockLost(f) && f.Time.After(h.expiry(timeout)):
		case unlock && isUnlockLost(f) && strings.Contains(f.Note, lossTimerNote) && !lossAt(h, f).Before(h.lossBound(lossAt(h, f), timeout, r.pauseTime(h.pid, h.begin, h.sent)+sendDelay(obs, h))):
			r.timerLosses++
		case unlock && isUnlockLost(f):
			at := lossAt(h, f)
			r.violate("pid %d: %s: %s (lockmw ended the hold %v before its key could expire, %v before its own bound allowed)", f.Pid, f.Name, f.Note,
				h.expiry(timeout).Sub(at).Round(time.Microsecond), h.lossBound(at, timeout, r.pauseTime(h.pid, h.begin, h.sent)+sendDelay(obs, h)).Sub(at).Round(time.Microsecond))
		default:
			r.violate("pid %d: %s: %s", f.Pid, f.Name, f.Note)
		}
	}
	return timedOut
}

// check proves mutual exclusion, fencing order and recovery over the
// records of every process. timeout is the watchdog timeout; end is when the
// run stopped (no recovery is expected after it); obs is what the driver
// observed besides (nil: no lost replies, no stalls).
func check(recs []reliability.Record, kills []kill, timeout time.Duration, end time.Time, obs observed) crashReport {
	return checkShared(recs, kills, timeout, end, obs, nil)
}

// checkShared is check where the holds shared reports true for may overlap
// each other (a read-write lock's reads, rwchecker_test.go); every other
// hold overlaps none. shared nil: every hold is exclusive (a mutex's).
func checkShared(recs []reliability.Record, kills []kill, timeout time.Duration, end time.Time, obs observed, shared func(*hold) bool) crashReport {
	if shared == nil {
		shared = func(*hold) bool { return false }
	}
	r := assemble(recs, kills, timeout)
	phantoms := r.addPhantoms(obs, kills, timeout)
	excused := r.judgeFails(obs, timeout)
	rep := crashReport{
		Processes: r.processes, Acquisitions: r.acquisitions, Renewals: r.renewals, Lost: r.lost,
		Kills: len(kills), UnlockTimeouts: excused, FaultFails: r.faultFails, TimerLosses: r.timerLosses, OutlivedHolds: r.outlived, Phantoms: phantoms, Violations: r.violations, run: r,
	}
	violate := func(format string, a ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, a...))
	}
	byName := r.byName

	rep.MinSlack = -1
	for name, hs := range byName {
		// Fencing: tokens strictly increase in acquisition order, lost holds
		// included (holds of unfenced mutexes, named by negative numbers,
		// have none). A token is handed out by Redis within its Lock call,
		// which may return long after on a starved machine: a smaller token
		// that Lock returned later is a violation only when its call began
		// after the larger one's Lock had returned (as porcupine judges it),
		// and not while its process did not run.
		var lastFenced *hold
		for _, h := range hs {
			if h.token < 0 || h.phantom {
				continue
			}
			if lastFenced != nil && h.token <= lastFenced.token && !h.begin.Before(lastFenced.start) && !r.notRunning(obs, h.pid, lastFenced.start) {
				violate("%q: token %d (pid %d) acquired after token %d (pid %d): its Lock was called %v after that one's returned", name, h.token, h.pid, lastFenced.token, lastFenced.pid, h.begin.Sub(lastFenced.start))
			}
			if lastFenced == nil || h.token > lastFenced.token {
				lastFenced = h
			}
		}
		// Mutual exclusion: no two holds overlap, but two shared ones; a
		// lost hold excludes until its lossCut. prev is the hold h is
		// judged against: of the earlier holds, the one that ended last, or
		// for a shared h the exclusive one that ended last.
		var lastAny, lastExcl *hold
		until := func(h *hold) time.Time { return h.excludesUntil(timeout) }
		for _, h := range hs {
			if h.phantom || !until(h).After(h.start) {
				continue
			}
			prev := lastAny
			if shared(h) {
				prev = lastExcl
				if lastAny != nil && lastAny != lastExcl && h.start.Before(until(lastAny)) {
					rep.SharedOverlaps++
				}
			}
			if prev != nil {
				if h.start.Before(until(prev)) {
					violate("%q: %v overlaps %v by %v", name, h.describe(timeout), prev.describe(timeout), until(prev).Sub(h.start))
				}
				if prev.isLost() {
					// no hand-off to measure: the hold ended by its loss
				} else if prev.killed {
					if s := h.start.Sub(prev.end); rep.MinSlack < 0 || s < rep.MinSlack {
						rep.MinSlack = s
					}
				} else if prev.hasEnd && h.begin.Before(prev.end) { // h waited for prev's release
					gap := h.start.Sub(prev.end)
					rep.Handoffs = append(rep.Handoffs, gap)
					if gap > timeout/2 {
						rep.SlowHandoffs++
						since := time.Duration(-1)
						for _, k := range kills {
							if k.at.Before(prev.end) {
								since = prev.end.Sub(k.at)
							}
						}
						rep.SlowAfterKill = max(rep.SlowAfterKill, since)
					}
					if gap > claimWindow(timeout) {
						rep.slow = append(rep.slow, handoff{name: name, prev: prev, next: h})
					}
				}
			}
			if lastAny == nil || until(h).After(until(lastAny)) {
				lastAny = h
			}
			if !shared(h) && (lastExcl == nil || until(h).After(until(lastExcl))) {
				lastExcl = h
			}
		}
		// A lost hold's loss should be noticed before the next holder
		// begins; when it is not, only fencing protects the resource.
		for i, h := range hs {
			if !h.isLost() {
				continue
			}
			for _, n := range hs[i+1:] {
				if !n.isLost() {
					if n.start.Before(h.lost) {
						rep.LateNotices++
					}
					break
				}
			}
		}
	}

	r.recoveries(&rep, kills, timeout, end, obs, shared)
	slowestFirst(rep.recovered)
	slices.Sort(rep.Violations)
	slices.Sort(rep.Handoffs)
	return rep
}

// recoveries measures, for every name a killed process held, the time from
// the kill to the name's next acquisition, judged against recoveryBound,
// and reports a name never acquired again. The recovery from a shared hold
// (a killed reader's) is measured, not judged: the next hold of its name may
// be a writer that waits for live readers too (rwchecker_test.go).
func (r *run) recoveries(rep *crashReport, kills []kill, timeout time.Duration, end time.Time, obs observed, shared func(*hold) bool) {
	violate := func(format string, a ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, a...))
	}
	for _, k := range kills {
		open := r.openAtKill[k.pid]
		if len(open) > 0 {
			rep.KillsHolding++
		}
		for _, h := range open {
			var next *hold
			for _, n := range r.byName[h.name] {
				if n != h && !n.start.Before(k.at) && !n.start.Before(h.start) && (next == nil || n.start.Before(next.start)) {
					next = n
				}
			}
			if next == nil {
				if shared(h) {
					continue
				}
				if end.Sub(k.at) > recoveryBound(timeout, dropsOn(obs, h.name, k.at, end), max(stalledIn(obs, k.at, end), starvedIn(obs, k.at, end))+faultedIn(obs, k.at, end))+2*time.Second {
					violate("%q: held by pid %d when it was killed at %s, never acquired again", h.name, h.pid, k.at.Format("15:04:05.000"))
				}
				continue
			}
			if bound, ok := rep.measure(k, h, next, timeout, obs, r); !ok && !shared(h) {
				violate("%q: held by pid %d when it was killed, acquired again only %v later (bound %v)", h.name, h.pid, next.start.Sub(k.at), bound)
			}
		}
	}
}

// slowestFirst sorts recoveries by how long they took, slowest first.
func slowestFirst(rs []recovery) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].took > rs[j].took })
}

// faultedIn is obs.faultedIn, 0 when obs is nil.
func faultedIn(obs observed, from, to time.Time) time.Duration {
	if obs == nil {
		return 0
	}
	return obs.faultedIn(from, to)
}

// dropsOn is obs.dropsOn, 0 when obs is nil.
func dropsOn(obs observed, name string, from, to time.Time) int {
	if obs == nil {
		return 0
	}
	return obs.dropsOn(name, from, to)
}

// starvedIn is obs.starvedIn, 0 when obs is nil.
func starvedIn(obs observed, from, to time.Time) time.Duration {
	if obs == nil {
		return 0
	}
	return obs.starvedIn(from, to)
}

// stalledIn is obs.stalledIn, 0 when obs is nil.
func stalledIn(obs observed, from, to time.Time) time.Duration {
	if obs == nil {
		return 0
	}
	return obs.stalledIn(from, to)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readRecords reads the records of one log file.
func readRecords(path string) ([]reliability.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []reliability.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, err := reliability.ParseRecord(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

// claimWindow is the TTL a lock handed to a waiter of TTL timeout has until
// the waiter's client claims it: a tenth of it, at least 200ms, at most all
// of it (lockmw's claimWindow, docs/waiting.md).
func claimWindow(timeout time.Duration) time.Duration {
	return min(timeout, max(timeout/10, 200*time.Millisecond))
}
