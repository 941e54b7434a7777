package reliability_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/require"
)

// porcupineTimeout bounds porcupine's search over one run's history; a
// search that does not finish reports Unknown, apart from a verdict.
var porcupineTimeout = flag.Duration("porcupine-timeout", time.Minute, "how long porcupine may search one crash run's history")

// linearOps is the run's history as porcupine's operations: every logged
// hold's acquisition, over [Lock called, Lock returned], with its key's
// earliest expiry (its TTL from the last request Lock sent, the claim
// window for a hold handed over); every renewal attempt, from its send
// time, extending the earliest expiry when it succeeded, finding the hold
// gone by when its hook ran when it says so (but those sent beside the
// Unlock); every Unlock, at its End record, as today's checker ends a hold
// there (the real release comes later: placing it at the End record accepts
// more histories, never fewer), lost when it failed, the hold was lost or
// outlived its key: then it may find the hold gone; a lost hold with no End
// record is released, lost, at its Lost record (the worker's Unlock after
// the loss: a multi-lock's surviving member is released then). The holds Redis held for a killed
// process that never logged them (phantoms) have no critical section and
// are left out, as today's checker leaves them out of exclusion. shared
// tells a read hold of a read-write lock.
func linearOps(r *run, recs []reliability.Record, timeout time.Duration, shared func(*hold) bool) []reliability.Op {
	ends := make(map[holdKey]time.Time)
	renewals := make(map[holdKey][]reliability.Record)
	unlockFailed := make(map[holdKey]bool)
	for _, rc := range recs {
		k := holdKey{rc.Pid, rc.Name, rc.Token}
		switch {
		case rc.Kind == reliability.End:
			ends[k] = rc.Time
		case rc.Kind == reliability.Renew:
			renewals[k] = append(renewals[k], rc)
		case rc.Kind == reliability.Fail && strings.HasPrefix(rc.Note, reliability.UnlockFailedNote):
			unlockFailed[k] = true
		}
	}
	var ops []reliability.Op
	id := 0
	for _, hs := range r.byName {
		for _, h := range hs {
			if h.phantom || !h.hasStart {
				continue
			}
			id++
			k := holdKey{h.pid, h.name, h.token}
			isShared := shared != nil && shared(h)
			ttl := timeout
			if h.waited {
				ttl = claimWindow(timeout)
			}
			call := h.begin
			if call.IsZero() || call.After(h.start) {
				call = h.start
			}
			ops = append(ops, reliability.Op{Kind: reliability.OpAcquire, Name: h.name, Process: h.pid, Hold: id, Shared: isShared,
				Token: h.token, Call: call, Return: h.start, Expires: h.sent.Add(ttl - expiryTolerance)})
			end, ended := ends[k]
			for _, rn := range renewals[k] {
				at := rn.Time
				if ended && !at.Before(end) {
					continue // beside the Unlock: it only proves the hold lasted to then
				}
				gone := rn.Note == reliability.RenewLostNote && !rn.Begin.IsZero()
				if h.isLost() && (!at.Before(h.lost) || gone && !rn.Begin.Before(h.lost)) {
					continue // after the loss: a multi-lock's Unlock may have released this member
				}
				ret := later(at, h.start).Add(time.Nanosecond) // sent before Lock's caller logged the Start
				if gone {
					ret = later(ret, rn.Begin) // its reply was in by then
				}
				ops = append(ops, reliability.Op{Kind: reliability.OpRenew, Name: h.name, Process: h.pid, Hold: id, Shared: isShared,
					Call: at, Return: ret, Expires: at.Add(timeout - expiryTolerance), Failed: rn.Note != "", Gone: gone})
			}
			if !ended {
				if !h.isLost() {
					continue // killed with the hold open: its key expires
				}
				// The worker logs the loss, then calls Unlock, which
				// releases what is still held: a multi-lock's other member,
				// whose key had not expired, or a key the loss timer gave
				// up on before it could expire. The release runs after the
				// Lost record and before the worker's next record; placed
				// at the record, it may find the hold gone.
				end = h.lost
			}
			ops = append(ops, reliability.Op{Kind: reliability.OpRelease, Name: h.name, Process: h.pid, Hold: id, Shared: isShared,
				Call: end, Return: end.Add(time.Nanosecond), Lost: unlockFailed[k] || h.isLost() || h.outlived})
		}
	}
	return ops
}

// history is what checkLinearizable judges: a crash run's records, kills
// and holds (assembled by today's checker, whose violations are today),
// its watchdog timeout, the model's spec, and which holds are shared (nil:
// none).
type history struct {
	run     *run
	recs    []reliability.Record
	kills   []kill
	timeout time.Duration
	spec    reliability.Spec
	shared  func(*hold) bool
	today   []string
}

// checkLinearizable feeds the run's history to porcupine beside today's
// checker: it logs the verdict, the partitions searched (names and their
// epochs) and the time the search took. A rejected history fails the test,
// whatever today's checker said (when it accepted the history, one of the
// two is wrong, and the test says so): its visualisation and its records
// are written into the test's artifact directory, and their paths printed.
// A search that timed out is reported apart, as no verdict.
func checkLinearizable(t *testing.T, prefix string, hs history) {
	t.Helper()
	ops := linearOps(hs.run, hs.recs, hs.timeout, hs.shared)
	v := reliability.Check(hs.spec, ops, *porcupineTimeout)
	failed, gone := 0, 0
	for _, op := range ops {
		if op.Failed {
			failed++
		}
		if op.Gone {
			gone++
		}
	}
	t.Logf("%s: porcupine (%s model): %d operations (%d renewal attempts that did not extend a hold, %d of them found it gone) on %d names in %d partitions, %s in %v",
		prefix, hs.spec.Kind, v.Ops, failed, gone, len(hs.run.byName), v.Partitions, v.Result, v.Took.Round(time.Millisecond))
	switch v.Result {
	case porcupine.Unknown:
		t.Logf("%s: porcupine: no verdict within -porcupine-timeout=%v (not a failure; today's checker judged the run)", prefix, *porcupineTimeout)
	case porcupine.Illegal:
		dir := t.ArtifactDir()
		path := filepath.Join(dir, prefix+"-history.html")
		if err := porcupine.VisualizePath(v.Model, v.Info, path); err != nil {
			t.Errorf("%s: porcupine: writing the visualisation: %v", prefix, err)
		}
		recs := filepath.Join(dir, prefix+"-records.log")
		if err := writeHistory(recs, hs.recs, hs.kills); err != nil {
			t.Errorf("%s: porcupine: writing the records: %v", prefix, err)
		}
		verdict := "as today's checker found"
		if len(hs.today) == 0 {
			verdict = "WHICH TODAY'S CHECKER ACCEPTED: one of the two checkers is wrong"
		}
		t.Errorf("%s: porcupine: the history is not linearizable, %s; its visualisation: %s, its records and kills: %s (kept with go test -artifacts -outputdir DIR)",
			prefix, verdict, path, recs)
	}
}

// writeHistory writes recs, one line each (Record.String), then a line
// "# kill <pid> <Unix ns>" per kill, into path.
func writeHistory(path string, recs []reliability.Record, kills []kill) error {
	var b strings.Builder
	for _, rc := range recs {
		b.WriteString(rc.String() + "\n")
	}
	for _, k := range kills {
		fmt.Fprintf(&b, "# kill %d %d\n", k.pid, k.at.UnixNano())
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// replay names a history a crash test wrote when porcupine rejected it.
var replay = flag.String("replay", "", "check again the history a crash test wrote on a rejection (its <scenario>-records.log)")

// TestLinearizeReplay checks again, with both checkers, a history a crash
// test wrote when porcupine rejected it: go test -run TestLinearizeReplay
// -replay DIR/crash-rw-records.log. What the driver observed besides the
// records (lost replies, stalls) is not in the file, so today's checker may
// judge recoveries and failed Unlocks more strictly than it did.
func TestLinearizeReplay(t *testing.T) {
	if *replay == "" {
		t.Skip("no -replay")
	}
	recs, kills, err := readHistory(*replay)
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	end := recs[len(recs)-1].Time
	prefix := strings.TrimSuffix(filepath.Base(*replay), "-records.log")
	hs := history{recs: recs, kills: kills, timeout: crashWatchdog, spec: reliability.Spec{Kind: reliability.MutexKind}}
	switch prefix {
	case "crash", "crash-multi", "crash-quorum":
		rep := check(recs, kills, crashWatchdog, end, nil)
		hs.run, hs.today = rep.run, rep.Violations
	case "crash-sem":
		hs.spec = reliability.Spec{Kind: reliability.SemaphoreKind, Permits: crashSemPermits}
		rep := checkSem(recs, kills, crashSemPermits, crashWatchdog, end, nil)
		hs.run, hs.today = rep.run, rep.Violations
	case "crash-rw":
		hs.spec, hs.shared = reliability.Spec{Kind: reliability.RWMutexKind}, isRead
		rep := checkRW(recs, kills, crashWatchdog, end, nil)
		hs.run, hs.today = rep.run, rep.Violations
	default:
		t.Fatalf("-replay %s: not a crash scenario's records (<scenario>-records.log)", *replay)
	}
	for _, v := range hs.today {
		t.Logf("today's checker: %s", v)
	}
	checkLinearizable(t, prefix, hs)
}

// readHistory reads a file writeHistory wrote.
func readHistory(path string) ([]reliability.Record, []kill, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var recs []reliability.Record
	var kills []kill
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var k kill
		var ns int64
		if _, err := fmt.Sscanf(line, "# kill %d %d", &k.pid, &ns); err == nil {
			k.at = time.Unix(0, ns)
			kills = append(kills, k)
			continue
		}
		r, err := reliability.ParseRecord(line)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, r)
	}
	return recs, kills, nil
}
