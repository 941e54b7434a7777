//go:build unix

package reliability_test

import (
	"hash/fnv"
	"syscall"
	"time"

	"github.com/stretchr/testify/require"
)

// faultKind is a fault the crash driver strikes a run with; each scenario
// draws its schedule of them from a seeded random source (see -seed).
type faultKind string

const (
	// killHolder SIGKILLs a worker that holds a lock: its key expires.
	killHolder faultKind = "kill holder"
	// killWaiter SIGKILLs a worker that holds nothing (its goroutines wait,
	// or are between holds): a dead waiter's queue entry may be handed the
	// lock, which then expires after its claim window.
	killWaiter faultKind = "kill waiter"
	// pauseHolder SIGSTOPs a worker that holds a lock for longer than the
	// watchdog timeout, then SIGCONTs it: its key expires while it cannot
	// notice, another process takes the name, and the woken worker's
	// holds are lost (its pause watch logs the pause; the checker cuts its
	// holds at their keys' earliest expiry, and only fencing protects a
	// write it makes on waking).
	pauseHolder faultKind = "pause holder past its TTL"
)

// faultSchedule is what a scenario draws from, each fault as likely as its
// entries: kills of holders stay the most common, as the recovery bound is
// judged on them. The fault proxy's latency and lost replies (-faults) and
// Redis's own faults (pause, restart, black hole: server_test.go,
// network_test.go) are not drawn here.
var faultSchedule = []faultKind{killHolder, killHolder, killWaiter, pauseHolder}

// scheduleStream is the second word of a scenario's random source: the
// test's name, so that one seed gives each scenario a schedule of its own.
func scheduleStream(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// strike strikes the run with one fault of kind k, if a process fits it.
func (d *driver) strike(k faultKind) {
	if d.wl.killsOnly {
		k = killHolder
	}
	switch k {
	case killHolder:
		if v := d.pickHolder(300 * time.Millisecond); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[k]++
		}
	case killWaiter:
		if v := d.pickIdle(); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[k]++
		}
	case pauseHolder:
		if v := d.pickHolder(300 * time.Millisecond); v != nil {
			require.NoError(d.t, v.cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(crashWatchdog + crashWatchdog/2) // the length of the pause: past the TTL
			require.NoError(d.t, v.cmd.Process.Signal(syscall.SIGCONT))
			d.faults[k]++
		}
	}
}

// fullAt is how many holds make a name of the run's workload full: its
// permits for a semaphore, one hold otherwise.
func (d *driver) fullAt() int {
	if d.wl.sem {
		return crashSemPermits
	}
	return 1
}

// killFullUnlessStruck makes sure the run killed a holder of a full name
// (for a semaphore, with every permit of it taken), which is what the
// checkers measure recoveries on (every crash scenario asserts a kill of a
// holder and a recovery): a schedule that drew few kills of holders (pauses
// take a watchdog and a half each) may have struck none; then one more kill
// strikes such a holder, waiting up to wait for one. It reports whether a
// kill of a full name was struck.
func (d *driver) killFullUnlessStruck(permits int, wait time.Duration) bool {
	if d.fullKills > 0 {
		return true
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if v := d.pickFull(permits); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[killHolder]++
			return true
		}
		time.Sleep(5 * time.Millisecond) // poll interval for new log lines
	}
	return false
}

// pickFull returns a random live worker that holds a permit of a name whose
// permits the workers hold all of, or nil.
func (d *driver) pickFull(permits int) *proc {
	held := make(map[string]int)
	for _, p := range d.procs {
		p.scan()
		for _, name := range p.open {
			held[name]++
		}
	}
	var victims []*proc
	for _, p := range d.procs {
		for _, name := range p.open {
			if held[name] >= permits {
				victims = append(victims, p)
				break
			}
		}
	}
	if len(victims) == 0 {
		return nil
	}
	return victims[d.rng.IntN(len(victims))]
}

// holdsFull reports whether p holds a permit of a name whose permits the
// workers hold all of (p's log scanned just now).
func (d *driver) holdsFull(p *proc, permits int) bool {
	held := make(map[string]int)
	for _, q := range d.procs {
		q.scan()
		for _, name := range q.open {
			held[name]++
		}
	}
	for _, name := range p.open {
		if held[name] >= permits {
			return true
		}
	}
	return false
}

// pickIdle returns a random live worker that holds nothing, or nil. A
// worker that has not logged its Hello yet is not one: killed before it
// opened its log, it would leave no log to read, and it waited for nothing.
func (d *driver) pickIdle() *proc {
	var idle []*proc
	for _, p := range d.procs {
		p.scan()
		if p.hello && len(p.open) == 0 {
			idle = append(idle, p)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	return idle[d.rng.IntN(len(idle))]
}
