package reliability_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
)

// semReport is what the semaphore checker found.
type semReport struct {
	Processes      int
	Acquisitions   int
	Renewals       int
	Lost           int
	Kills          int            // SIGKILLs sent
	KillsHolding   int            // of them, while the process held at least one permit
	recoveryStats                 // names a kill left with every permit taken, measured
	OutlivedHolds  int            // holds that ended past their key's earliest expiry, paused or lost at Unlock (see assemble)
	Phantoms       int            // holds never logged, of processes killed with the acquisition in flight (see addPhantoms)
	UnlockTimeouts int            // Unlocks that timed out while a reply on their name was lost
	FaultFails     int            // failed calls within a fault of a server or a proxy (see judgeFails)
	MostHeld       map[string]int // the most holds of each name at one instant
	Violations     []string

	run *run
}

// checkSem proves over the records of every process of the semaphore crash
// scenario that no more than permits holds of a name were live at one
// instant (a killed hold lasting until its permit's earliest expiry, a hold
// cancelled with ErrLockLost until its lossCut), that every hold ended, was lost or
// was killed, and that a name a kill left with every permit taken was
// acquired again within the watchdog timeout plus one renewal interval.
// timeout is the watchdog timeout; end is when the run stopped; obs is what
// the driver observed besides (nil: no lost replies, no stalls).
func checkSem(recs []reliability.Record, kills []kill, permits int, timeout time.Duration, end time.Time, obs observed) semReport {
	r := assemble(recs, kills, timeout)
	phantoms := r.addPhantoms(obs, kills, timeout)
	rep := semReport{
		Processes: r.processes, Acquisitions: r.acquisitions, Renewals: r.renewals, Lost: r.lost,
		Kills: len(kills), MostHeld: make(map[string]int), run: r, UnlockTimeouts: r.judgeFails(obs, timeout), OutlivedHolds: r.outlived, Phantoms: phantoms,
	}
	rep.FaultFails = r.faultFails
	for name, hs := range r.byName {
		rep.MostHeld[name] = sweep(r, name, hs, permits, timeout)
	}
	r.semRecoveries(&rep, kills, permits, timeout, end, obs)
	slowestFirst(rep.recovered)
	rep.Violations = r.violations
	slices.Sort(rep.Violations)
	return rep
}

// sweep counts the live holds of a name (hs, sorted by start) from one
// start or end to the next, reports every instant more than permits are
// live, and returns the most live at once. A hold that ends when another
// starts does not overlap it; a lost hold is live until its lossCut.
func sweep(r *run, name string, hs []*hold, permits int, timeout time.Duration) int {
	type event struct {
		at    time.Time
		h     *hold
		start bool
	}
	var evs []event
	for _, h := range hs {
		// A killed hold whose permit could have expired by the time Lock
		// returned (a waited one's claim window) held nothing we can count on.
		if until := h.excludesUntil(timeout); until.After(h.start) {
			evs = append(evs, event{h.start, h, true}, event{until, h, false})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return !evs[i].start && evs[j].start // ends first
	})
	live := make(map[*hold]bool)
	most := 0
	for _, e := range evs {
		if !e.start {
			delete(live, e.h)
			continue
		}
		live[e.h] = true
		most = max(most, len(live))
		if len(live) > permits {
			r.violate("%q: %d holds at %s, over %d permits: %s", name, len(live),
				e.at.Format("15:04:05.000000"), permits, liveList(live))
		}
	}
	return most
}

// liveList names the holds of live in start order.
func liveList(live map[*hold]bool) string {
	hs := make([]*hold, 0, len(live))
	for h := range live {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.String()
		if h.killed {
			parts[i] += " (killed, earliest expiry)"
		}
	}
	return strings.Join(parts, ", ")
}

// semRecoveries measures, for every name a killed process held, the time
// from the kill to the name's next acquisition when every permit was taken
// at the kill (otherwise the next acquisition need not wait for the dead
// holder's permit), and reports a name never acquired again.
func (r *run) semRecoveries(rep *semReport, kills []kill, permits int, timeout time.Duration, end time.Time, obs observed) {
	for _, k := range kills {
		open := r.openAtKill[k.pid]
		if len(open) > 0 {
			rep.KillsHolding++
		}
		seen := make(map[string]bool)
		for _, h := range open {
			if seen[h.name] {
				continue
			}
			seen[h.name] = true
			hs := r.byName[h.name]
			taken := 0
			var next *hold
			for _, n := range hs {
				if !n.isLost() && !n.start.After(k.at) && n.end.After(k.at) {
					taken++
				}
				if n != h && !n.start.Before(k.at) && !n.start.Before(h.start) && next == nil {
					next = n // hs is sorted by start
				}
			}
			if next == nil {
				if end.Sub(k.at) > recoveryBound(timeout, dropsOn(obs, h.name, k.at, end), max(stalledIn(obs, k.at, end), starvedIn(obs, k.at, end))+faultedIn(obs, k.at, end))+2*time.Second {
					r.violate("%q: held by pid %d when it was killed at %s, never acquired again", h.name, h.pid, k.at.Format("15:04:05.000"))
				}
				continue
			}
			if taken < permits {
				continue
			}
			if bound, ok := rep.measure(k, h, next, timeout, obs, r); !ok {
				r.violate("%q: every permit taken when pid %d was killed at %s, acquired again only %v later (bound %v), by %v",
					h.name, h.pid, k.at.Format("15:04:05.000"), next.start.Sub(k.at), bound, next)
			}
		}
	}
}

func (r semReport) String() string {
	return fmt.Sprintf("%d acquisitions, %d renewals, %d kills (%d of holders), %d recoveries, worst recovery %v, %d lost, %d violations",
		r.Acquisitions, r.Renewals, r.Kills, r.KillsHolding, r.Recoveries, r.WorstRecovery.Round(time.Millisecond), r.Lost, len(r.Violations))
}
