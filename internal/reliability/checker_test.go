package reliability_test

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
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
	sent        time.Time // Start record: last request sent by Lock
	end         time.Time // End record, or the killed hold's earliest expiry
	lastRenewal time.Time
	renewals    int
	lost        time.Time // Lost record: when the loss was noticed
	hasStart    bool
	waited      bool // the acquisition waited: maybe handed over with a claim window
	hasEnd      bool
	killed      bool // the process was killed with the hold open
}

func (h *hold) isLost() bool { return !h.lost.IsZero() }

func (h *hold) String() string {
	return fmt.Sprintf("pid %d token %d [%s, %s]", h.pid, h.token, h.start.Format("15:04:05.000000"), h.end.Format("15:04:05.000000"))
}

// crashReport is what the checker found.
type crashReport struct {
	Processes     int
	Acquisitions  int
	Renewals      int
	Lost          int
	LateNotices   int             // lost holds whose loss was noticed after the next holder began
	Kills         int             // SIGKILLs sent
	KillsHolding  int             // of them, while the process held at least one lock
	Recoveries    int             // names freed by a kill and measured
	WorstRecovery time.Duration   // kill -> next acquisition of a name the victim held
	MinSlack      time.Duration   // next acquisition - earliest expiry of a killed hold
	Handoffs      []time.Duration // end of a released hold -> start of the next, sorted
	SlowHandoffs  int             // of them, longer than half the timeout
	SlowAfterKill time.Duration   // the longest time from a kill to a slow hand-off's release
	Violations    []string
}

// run is every hold of a run, assembled from the records of every process.
type run struct {
	processes    int
	acquisitions int
	renewals     int
	lost         int
	byName       map[string][]*hold // holds that started, sorted by start
	openAtKill   map[int][]*hold    // holds open when their process was killed, by pid
	violations   []string
}

func (r *run) violate(format string, a ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, a...))
}

// assemble builds the holds of a run from its records and the driver's
// kills; timeout is the watchdog timeout. A hold open when its process was
// killed ends at the earliest moment its key could have expired. It reports
// records that make no sense, failed calls, and holds that never ended in a
// process that was not killed.
func assemble(recs []reliability.Record, kills []kill, timeout time.Duration) *run {
	r := &run{byName: make(map[string][]*hold), openAtKill: make(map[int][]*hold)}
	killedAt := make(map[int]time.Time)
	for _, k := range kills {
		killedAt[k.pid] = k.at
	}
	holds, pids := r.collect(recs)
	r.processes = len(pids)
	for _, h := range holds {
		if !h.hasStart {
			if h.hasEnd || h.isLost() {
				r.violate("%q: pid %d token %d ended but never started", h.name, h.pid, h.token)
			}
			continue // a renewal logged in the instant between the hold's start and its Start line
		}
		r.acquisitions++
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
			ttl := timeout
			if h.waited && h.lastRenewal.IsZero() {
				ttl = claimWindow(timeout)
			}
			h.end = later(h.sent, h.lastRenewal).Add(ttl - expiryTolerance)
			r.openAtKill[h.pid] = append(r.openAtKill[h.pid], h)
		}
		r.byName[h.name] = append(r.byName[h.name], h)
	}
	for _, hs := range r.byName {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
	}
	return r
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
	for _, rc := range recs {
		switch rc.Kind {
		case reliability.Hello:
			pids[rc.Pid] = true
		case reliability.Start:
			h := get(rc)
			if h.hasStart {
				r.violate("%q: token %d handed out twice to pid %d", rc.Name, rc.Token, rc.Pid)
			}
			h.hasStart, h.start, h.sent = true, rc.Time, rc.Sent
			h.waited = rc.Note == reliability.WaitedNote
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
			h.renewals++
			r.renewals++
			if rc.Time.After(h.lastRenewal) {
				h.lastRenewal = rc.Time
			}
		case reliability.Lost:
			get(rc).lost = rc.Time
		case reliability.Fail:
			r.violate("pid %d: %s: %s", rc.Pid, rc.Name, rc.Note)
		default:
			r.violate("pid %d: unknown record kind %q", rc.Pid, rc.Kind)
		}
	}
	return holds, pids
}

type holdKey struct {
	pid   int
	name  string
	token int64
}

// check proves mutual exclusion, fencing order and recovery over the
// records of every process. timeout is the watchdog timeout; end is when the
// run stopped (no recovery is expected after it).
func check(recs []reliability.Record, kills []kill, timeout time.Duration, end time.Time) crashReport {
	r := assemble(recs, kills, timeout)
	rep := crashReport{
		Processes: r.processes, Acquisitions: r.acquisitions, Renewals: r.renewals, Lost: r.lost,
		Kills: len(kills), Violations: r.violations,
	}
	violate := func(format string, a ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, a...))
	}
	byName, openAtKill := r.byName, r.openAtKill

	rep.MinSlack = -1
	for name, hs := range byName {
		// Fencing: tokens strictly increase in acquisition order, lost holds
		// included (holds of unfenced mutexes, named by negative numbers,
		// have none).
		var lastFenced *hold
		for _, h := range hs {
			if h.token < 0 {
				continue
			}
			if lastFenced != nil && h.token <= lastFenced.token {
				violate("%q: token %d (pid %d) acquired after token %d (pid %d)", name, h.token, h.pid, lastFenced.token, lastFenced.pid)
			}
			lastFenced = h
		}
		// Mutual exclusion: no two holds that were not lost overlap.
		var prev *hold
		for _, h := range hs {
			if h.isLost() {
				continue
			}
			if prev != nil {
				if h.start.Before(prev.end) {
					violate("%q: %v overlaps %v by %v", name, h, prev, prev.end.Sub(h.start))
				}
				if prev.killed {
					if s := h.start.Sub(prev.end); rep.MinSlack < 0 || s < rep.MinSlack {
						rep.MinSlack = s
					}
				} else if prev.hasEnd {
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
				}
			}
			if prev == nil || h.end.After(prev.end) {
				prev = h
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

	// Recovery: a name the victim held is acquired again within the
	// watchdog timeout plus one renewal interval after the kill.
	bound := timeout + timeout/3
	for _, k := range kills {
		open := openAtKill[k.pid]
		if len(open) > 0 {
			rep.KillsHolding++
		}
		for _, h := range open {
			var next *hold
			for _, n := range byName[h.name] {
				if !n.start.Before(k.at) && (next == nil || n.start.Before(next.start)) {
					next = n
				}
			}
			if next == nil {
				if end.Sub(k.at) > bound+2*time.Second {
					violate("%q: held by pid %d when it was killed at %s, never acquired again", h.name, h.pid, k.at.Format("15:04:05.000"))
				}
				continue
			}
			rec := next.start.Sub(k.at)
			rep.Recoveries++
			rep.WorstRecovery = max(rep.WorstRecovery, rec)
			if rec > bound {
				violate("%q: held by pid %d when it was killed, acquired again only %v later (bound %v)", h.name, h.pid, rec, bound)
			}
		}
	}
	slices.Sort(rep.Violations)
	slices.Sort(rep.Handoffs)
	return rep
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
