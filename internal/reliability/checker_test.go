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

// check proves mutual exclusion, fencing order and recovery over the
// records of every process. timeout is the watchdog timeout; end is when the
// run stopped (no recovery is expected after it).
func check(recs []reliability.Record, kills []kill, timeout time.Duration, end time.Time) crashReport {
	var rep crashReport
	violate := func(format string, a ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, a...))
	}
	killedAt := make(map[int]time.Time)
	for _, k := range kills {
		killedAt[k.pid] = k.at
	}
	rep.Kills = len(kills)

	type key struct {
		pid   int
		name  string
		token int64
	}
	holds := make(map[key]*hold)
	get := func(r reliability.Record) *hold {
		k := key{r.Pid, r.Name, r.Token}
		h := holds[k]
		if h == nil {
			h = &hold{pid: r.Pid, name: r.Name, token: r.Token}
			holds[k] = h
		}
		return h
	}
	pids := make(map[int]bool)
	for _, r := range recs {
		switch r.Kind {
		case reliability.Hello:
			pids[r.Pid] = true
		case reliability.Start:
			h := get(r)
			if h.hasStart {
				violate("%q: token %d handed out twice to pid %d", r.Name, r.Token, r.Pid)
			}
			h.hasStart, h.start, h.sent = true, r.Time, r.Sent
			h.waited = r.Note == reliability.WaitedNote
			if h.sent.IsZero() {
				h.sent = r.Begin
			}
		case reliability.End:
			h := get(r)
			h.hasEnd, h.end = true, r.Time
		case reliability.Renew:
			h := get(r)
			h.renewals++
			rep.Renewals++
			if r.Time.After(h.lastRenewal) {
				h.lastRenewal = r.Time
			}
		case reliability.Lost:
			get(r).lost = r.Time
		case reliability.Fail:
			violate("pid %d: %s: %s", r.Pid, r.Name, r.Note)
		default:
			violate("pid %d: unknown record kind %q", r.Pid, r.Kind)
		}
	}
	rep.Processes = len(pids)

	byName := make(map[string][]*hold)
	openAtKill := make(map[int][]*hold)
	for _, h := range holds {
		if !h.hasStart {
			if h.hasEnd || h.isLost() {
				violate("%q: pid %d token %d ended but never started", h.name, h.pid, h.token)
			}
			continue // a renewal logged in the instant between the hold's start and its Start line
		}
		rep.Acquisitions++
		if h.token == 0 {
			violate("%q: pid %d has no token", h.name, h.pid)
		}
		if h.isLost() {
			rep.Lost++
		}
		if !h.hasEnd && !h.isLost() {
			if _, killed := killedAt[h.pid]; !killed {
				violate("%q: pid %d token %d never ended, and the process was not killed", h.name, h.pid, h.token)
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
			openAtKill[h.pid] = append(openAtKill[h.pid], h)
		}
		byName[h.name] = append(byName[h.name], h)
	}

	rep.MinSlack = -1
	for name, hs := range byName {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
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
