//go:build unix

package reliability_test

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
)

// crashQuorumShort is the quorum scenario's default length.
const crashQuorumShort = 20 * time.Second

// TestCrashQuorum is scenario 1 on a quorum of three masters
// (lockmw.NewQuorum in every process, Redlock): worker processes contend on a
// few names while the driver SIGKILLs holders and starts replacements; the
// checker proves from every process's log that no two holds of a name
// overlapped, that fencing tokens increased (a quorum's token is one above
// every counter of a majority), and that a dead holder's lock was free again
// within the watchdog timeout plus one renewal interval (sentAtCall says how
// a hold's key's earliest expiry is taken on a quorum). Recovery on a quorum
// rests on how a split vote is resolved (lockmw/quorumsplit.go): when a
// killed hold's key expires, its waiters retry at once and split the
// masters; the contender that ranks first completes. The sampler reads
// every master, so that a partial win of a killed contender is not taken
// for a hold (addPhantoms). The faults of a server or a proxy strike one
// master at a time (a pause, a restart, latency, lost replies, a black
// hole): the other two are a majority.
func TestCrashQuorum(t *testing.T) {
	t.Parallel()
	dur := crashQuorumShort
	if *soak > 0 {
		dur = *soak
	}
	srvs := make([]*redistest.Server, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t, persistence()...)
	}
	d := newDriver(t, workerBinary(t), srvs, time.Now().Add(dur), mutexWorkload)
	recs := sentAtCall(d.run())
	rep := check(recs, d.kills, crashWatchdog, d.until, d.observed())
	t.Logf("crash-quorum: %v run on %d masters, %d processes (%d at a time, %d goroutines each, plus the driver), %d names, watchdog %v",
		dur.Round(time.Second), len(srvs), rep.Processes-1, crashProcs, crashGoroutines, len(d.wl.names), crashWatchdog)
	t.Logf("crash-quorum: %d acquisitions, %d renewals, %d kills (%d of holders), %d recoveries (%d across a stall), worst recovery %v (bound %v), min slack after a killed hold's expiry %v, %d lost holds (%d noticed late), %d holds acquired in flight by a killed process, %d violations",
		rep.Acquisitions, rep.Renewals, rep.Kills, rep.KillsHolding, rep.Recoveries, rep.Stalled, rep.WorstRecovery.Round(time.Millisecond),
		recoveryBound(crashWatchdog, 0, 0), rep.MinSlack.Round(100*time.Microsecond), rep.Lost, rep.LateNotices, rep.Phantoms, len(rep.Violations))
	if n := len(rep.Handoffs); n > 0 {
		t.Logf("crash-quorum: release -> next acquisition of the name by a waiter: median %v, p99 %v, max %v",
			rep.Handoffs[n/2].Round(10*time.Microsecond), rep.Handoffs[n*99/100].Round(10*time.Microsecond), rep.Handoffs[n-1].Round(10*time.Microsecond))
	}
	d.logFaults("crash-quorum", rep.UnlockTimeouts, rep.FaultFails)
	d.logTotal("crash-quorum", rep.Acquisitions)
	d.logSlowest("crash-quorum", rep.run, rep.recovered)
	checkLinearizable(t, "crash-quorum", history{run: rep.run, recs: recs, kills: d.kills, timeout: crashWatchdog, spec: reliability.Spec{Kind: reliability.MutexKind}, today: rep.Violations})
	for i, v := range rep.Violations {
		if i == 20 {
			t.Errorf("... and %d more", len(rep.Violations)-i)
			break
		}
		t.Errorf("violation: %s", v)
	}
	// The run must have exercised what it proves: the quorum's scripts on
	// every master, holders killed, recoveries, renewals.
	for i := range srvs {
		assert.Positive(t, d.commandCalls(i)["evalsha"], "no script ran on master %d", i)
	}
	assert.Positive(t, rep.KillsHolding, "no holder was killed")
	assert.Positive(t, rep.Recoveries, "no recovery was measured")
	assert.Positive(t, rep.Renewals, "no lock was renewed")
	assert.Greater(t, rep.Acquisitions, 50)
}

// sentAtCall returns recs with every Start record's Sent at its Begin, the
// Lock call. On a quorum, Sent (reliability.SendTimes.Last) is no lower
// bound on when the hold's keys got their TTL: a fenced acquisition sends
// its fence round after it won, and a master's request may be sent after
// the others answered. The Lock call is one, looser for an acquisition
// that waited: the checker then takes a killed hold's key to expire earlier
// than it did, which can hide an overlap with it, never show one.
func sentAtCall(recs []reliability.Record) []reliability.Record {
	for i, rc := range recs {
		if rc.Kind == reliability.Start && !rc.Begin.IsZero() {
			recs[i].Sent = rc.Begin
		}
	}
	return recs
}
