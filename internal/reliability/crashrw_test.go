//go:build unix

package reliability_test

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
)

const crashRWShort = 15 * time.Second

var rwWorkload = workload{
	mode:  "crash-rw",
	names: []string{"crashrw-a", "crashrw-b", "crashrw-c"},
	// The driver's waiters take the write side: the name is free of every
	// reader and writer when one gets it.
	locker: func(c *lockmw.Client, name string) lockmw.Locker { return c.RWMutex(name, lockmw.WithFencing()) },
}

// TestCrashRWMutex is scenario 1 for read-write locks: worker processes take
// the fenced RWMutex of three names, the read side four times in five and
// the write side otherwise, while the driver SIGKILLs holders and starts
// replacements; the read-write checker (checkRW) then proves from every
// process's log that no write hold overlapped any other hold of its name
// (a killed hold lasting until its keys could first have expired), that
// the write holds' fencing tokens increased, and that a name a killed
// writer held was acquired again within the watchdog timeout plus one
// renewal interval. The recovery after a killed reader is measured and
// logged, not judged.
func TestCrashRWMutex(t *testing.T) {
	t.Parallel()
	dur := crashRWShort
	if *soak > 0 {
		dur = *soak
	}
	srv := redistest.Start(t, persistence()...)
	d := newDriver(t, workerBinary(t), []*redistest.Server{srv}, time.Now().Add(dur), rwWorkload)
	recs := d.run()
	rep := checkRW(recs, d.kills, crashWatchdog, d.until, d.observed())
	reads, writes, killedReads, killedWrites := rwCounts(rep.run)
	t.Logf("crash-rw: %v run, %d processes (%d at a time, %d goroutines each, plus the driver), %d names, watchdog %v",
		dur.Round(time.Second), rep.Processes-1, crashProcs, crashGoroutines, len(d.wl.names), crashWatchdog)
	t.Logf("crash-rw: %d acquisitions (%d reads, %d writes), %d reads began beside another read, %d renewals, %d kills (%d of holders; %d read and %d write holds killed), %d recoveries (%d after a lost reply, %d across a stall), worst recovery %v (bound %v, judged after killed writers only), %d lost holds (%d noticed late), %d holds outlived their keys' earliest expiry, %d holds acquired in flight by a killed process, %d violations",
		rep.Acquisitions, reads, writes, rep.SharedOverlaps, rep.Renewals, rep.Kills, rep.KillsHolding, killedReads, killedWrites,
		rep.Recoveries, rep.LostReplies, rep.Stalled, rep.WorstRecovery.Round(time.Millisecond), recoveryBound(crashWatchdog, 0, 0),
		rep.Lost, rep.LateNotices, rep.OutlivedHolds, rep.Phantoms, len(rep.Violations))
	d.logFaults("crash-rw", rep.UnlockTimeouts, rep.FaultFails)
	d.logTotal("crash-rw", rep.Acquisitions)
	d.logSlowest("crash-rw", rep.run, rep.recovered)
	checkLinearizable(t, "crash-rw", history{run: rep.run, recs: recs, kills: d.kills, timeout: crashWatchdog, spec: reliability.Spec{Kind: reliability.RWMutexKind}, shared: isRead, today: rep.Violations})
	for i, v := range rep.Violations {
		if i == 20 {
			t.Errorf("... and %d more", len(rep.Violations)-i)
			break
		}
		t.Errorf("violation: %s", v)
	}
	// The run must have exercised what it proves: reads held together,
	// writes, holders killed, renewals.
	assert.Positive(t, rep.SharedOverlaps, "no two reads were held together")
	assert.Positive(t, writes, "no write hold")
	assert.Positive(t, rep.KillsHolding, "no holder was killed")
	assert.Positive(t, rep.Recoveries, "no recovery was measured")
	assert.Positive(t, rep.Renewals, "no lock was renewed")
	assertRan(t, rep.Acquisitions)
}

// rwCounts counts the logged read and write holds of a run, and of them
// those open when their process was killed.
func rwCounts(r *run) (reads, writes, killedReads, killedWrites int) {
	for _, hs := range r.byName {
		for _, h := range hs {
			if h.phantom {
				continue
			}
			if isRead(h) {
				reads++
				if h.killed {
					killedReads++
				}
				continue
			}
			writes++
			if h.killed {
				killedWrites++
			}
		}
	}
	return reads, writes, killedReads, killedWrites
}
