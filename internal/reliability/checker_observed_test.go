package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeObserved is what a driver would have observed of a synthetic run.
type fakeObserved struct {
	drops  map[string][]time.Time  // by name
	stalls []stall                 // the sampler's
	seen   map[string][]seenHolder // by name
	faults []faultWindow           // the servers' and proxies'
	starve []stall                 // when some task waited for a CPU
}

func (f fakeObserved) dropsOn(name string, from, to time.Time) int {
	n := 0
	for _, at := range f.drops[name] {
		if at.After(from) && at.Before(to) {
			n++
		}
	}
	return n
}

func (f fakeObserved) stalledIn(from, to time.Time) time.Duration {
	var d time.Duration
	for _, st := range f.stalls {
		if b, e := later(from, st.from), earlier(to, st.to); e.After(b) {
			d += e.Sub(b)
		}
	}
	return d
}

func (f fakeObserved) starvedIn(from, to time.Time) time.Duration {
	var d time.Duration
	for _, st := range f.starve {
		if b, e := later(from, st.from), earlier(to, st.to); e.After(b) {
			d += e.Sub(b)
		}
	}
	return d
}

func (f fakeObserved) holders(name string) []seenHolder { return f.seen[name] }

func (f fakeObserved) faultedIn(from, to time.Time) time.Duration {
	return faultedInWindows(f.faults, from, to)
}

// helloClients are Hello records of pids whose client IDs are "c<pid>".
func helloClients(pids ...int) []reliability.Record {
	var rs []reliability.Record
	for _, p := range pids {
		rs = append(rs, reliability.Record{Kind: reliability.Hello, Pid: p, Note: fmt.Sprintf("c%d", p)})
	}
	return rs
}

// The checker judges recoveries, failed Unlocks and long holds against what
// the driver observed besides the records: replies the network lost,
// stalls, holds Redis kept for processes killed with an acquisition in
// flight, and pauses the processes logged. Each rule excuses only what it
// explains.
func TestCheckerJudgesAgainstWhatWasObserved(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	E, R, F, Z := reliability.End, reliability.Renew, reliability.Fail, reliability.Pause
	unlockFailed := func(pid int, name string, tok int64, ms int, err error) reliability.Record {
		return reliability.Record{Kind: F, Pid: pid, Name: name, Token: tok, Time: at(ms), Note: reliability.UnlockFailedNote + err.Error()}
	}
	paused := func(pid, from, to int) reliability.Record {
		return reliability.Record{Kind: Z, Pid: pid, Begin: at(from), Time: at(to)}
	}
	for _, tc := range []struct {
		name  string
		recs  []reliability.Record
		kills []kill
		obs   fakeObserved
		want  string // substring of every violation; "" for none
	}{
		{
			name:  "a slow recovery with a reply on the name lost meanwhile gets a timeout more",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 2300), rec(E, 2, "a", 2, 2310)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{drops: map[string][]time.Time{"a": {at(1101)}}},
		},
		{
			name:  "a reply lost on another name explains nothing",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 2300), rec(E, 2, "a", 2, 2310)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{drops: map[string][]time.Time{"b": {at(1101)}}},
			want:  "acquired again only",
		},
		{
			name:  "a stall of the driver or Redis adds its length",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 1800), rec(E, 2, "a", 2, 1810)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{stalls: []stall{{at(900), at(1500)}}},
		},
		{
			name:  "a stall shorter than the delay is not enough",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 1800), rec(E, 2, "a", 2, 1810)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{stalls: []stall{{at(900), at(950)}}},
			want:  "acquired again only",
		},
		{
			// pid 2 retried as the key expired, and was killed with its
			// request in flight: Redis gave it the name after its death.
			name:  "a name taken by an acquisition in flight at a kill was recovered then",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(3, "a", 3, 2110), rec(E, 3, "a", 3, 2120)},
			kills: []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(1099)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 998 * time.Millisecond, false}}}},
		},
		{
			name:  "and its own recovery is measured from its kill",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(3, "a", 3, 2500), rec(E, 3, "a", 3, 2510)},
			kills: []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(1099)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 998 * time.Millisecond, false}}}},
			want:  "held by pid 2 when it was killed, acquired again only",
		},
		{
			name:  "a dead process's field seen long after its kill was handed over, not acquired",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(3, "a", 3, 2110), rec(E, 3, "a", 3, 2120)},
			kills: []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(500)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 998 * time.Millisecond, false}}}},
			want:  "held by pid 1 when it was killed, acquired again only",
		},
		{
			name:  "so was one seen with only a claim window, however soon",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(3, "a", 3, 2110), rec(E, 3, "a", 3, 2120)},
			kills: []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(1099)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 198 * time.Millisecond, false}}}},
			want:  "held by pid 1 when it was killed, acquired again only",
		},
		{
			// On a quorum, pid 2 won one master of three in a split vote
			// and was killed: a partial win, no hold. pid 1's killed hold
			// is recovered by pid 3, as if nothing was seen.
			name:  "a partial win of a split vote on a quorum is no phantom",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(3, "a", 3, 2500), rec(E, 3, "a", 3, 2510)},
			kills: []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(1099)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 998 * time.Millisecond, true}}}},
			want:  "held by pid 1 when it was killed, acquired again only",
		},
		{
			// The driver won token 1 at 1000, then did not run until 2400
			// (its sampler heard nothing): its key expired, pid 2 won token
			// 2 at 2100, and the driver's Lock returned after.
			name: "a token inversion by the driver while it did not run is a paused holder's",
			recs: []reliability.Record{start(2, "a", 2, 2100), rec(E, 2, "a", 2, 2110), start(1, "a", 1, 2400), rec(E, 1, "a", 1, 2402)},
			obs:  fakeObserved{stalls: []stall{{at(1001), at(2399)}}},
		},
		{
			name: "and one by a worker that logged a pause",
			recs: []reliability.Record{start(2, "a", 2, 2100), rec(E, 2, "a", 2, 2110), start(3, "a", 1, 2400), rec(E, 3, "a", 1, 2402), paused(3, 1001, 2399)},
		},
		{
			name: "a token inversion without a pause is a violation",
			recs: []reliability.Record{start(2, "a", 2, 2100), rec(E, 2, "a", 2, 2110), start(3, "a", 1, 2400), rec(E, 3, "a", 1, 2402)},
			obs:  fakeObserved{stalls: []stall{{at(1001), at(2399)}}},
			want: "token 1 (pid 3) acquired after token 2 (pid 2)",
		},
		{
			name:  "a logged hold is no phantom",
			recs:  []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 5), startField(2, "a", 2, 1095, "c2:7"), start(3, "a", 3, 2500), rec(E, 3, "a", 3, 2510)},
			kills: []kill{{pid: 2, at: at(1099)}},
			obs:   fakeObserved{seen: map[string][]seenHolder{"a": {{"c2:7", at(1101), 998 * time.Millisecond, false}}}},
			want:  "held by pid 2 when it was killed, acquired again only",
		},
		{
			name: "an Unlock that timed out on a lost reply keeps Unlock's contract",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), unlockFailed(1, "a", 1, 511, context.DeadlineExceeded)},
			obs:  fakeObserved{drops: map[string][]time.Time{"a": {at(11)}}},
		},
		{
			name: "so does one that timed out while Redis stalled",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), unlockFailed(1, "a", 1, 511, context.DeadlineExceeded)},
			obs:  fakeObserved{stalls: []stall{{at(20), at(400)}}},
		},
		{
			name: "or while its process paused",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), paused(1, 20, 400), unlockFailed(1, "a", 1, 511, context.DeadlineExceeded)},
		},
		{
			name: "one that timed out with no reply lost is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), unlockFailed(1, "a", 1, 511, context.DeadlineExceeded)},
			want: "deadline exceeded",
		},
		{
			// The process did not run from 300 to 1500: no renewal, no
			// loss timer; the next holder took the expired key at 1100.
			name: "a hold that outlived its key in a pause of its process ends at the key's expiry",
			recs: []reliability.Record{start(1, "a", 1, 0), paused(1, 300, 1500), rec(E, 1, "a", 1, 1500),
				unlockFailed(1, "a", 1, 1501, fmt.Errorf("lockmw: lock lost: %q was gone at unlock", "a")),
				start(2, "a", 2, 1100), rec(E, 2, "a", 2, 1110)},
		},
		{
			name: "without a pause it is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 1500), start(2, "a", 2, 1100), rec(E, 2, "a", 2, 1110)},
			want: "overlaps",
		},
		{
			// Its loss timer and its critical section's end came together;
			// the section ended first, Unlock found the key gone.
			name: "so does a hold that ended past its key's expiry and whose Unlock found it lost",
			recs: []reliability.Record{waited(1, "a", 1, 0), rec(E, 1, "a", 1, 205),
				unlockFailed(1, "a", 1, 206, fmt.Errorf("lockmw: lock lost: %q was gone at unlock", "a")),
				start(2, "a", 2, 201), rec(E, 2, "a", 2, 210)},
		},
		{
			// The section ended in time; the Unlock ran when the key could
			// have expired (a stalled machine between the two).
			name: "an Unlock that returned after the key could expire may find the hold lost",
			recs: []reliability.Record{waited(1, "a", 1, 0), rec(E, 1, "a", 1, 150),
				unlockFailed(1, "a", 1, 260, fmt.Errorf("lockmw: lock lost: %q was gone at unlock", "a"))},
		},
		{
			name: "an Unlock that found a hold lost before its key could expire is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 205),
				unlockFailed(1, "a", 1, 206, fmt.Errorf("lockmw: lock lost: %q was gone at unlock", "a"))},
			want: "lock lost",
		},
		{
			name: "a failed Lock within a fault of a server or a proxy is no violation",
			recs: []reliability.Record{lockFailed(1, "a", 1500, "dial tcp: connection refused")},
			obs:  fakeObserved{faults: []faultWindow{{at(1000), at(5000)}}},
		},
		{
			name: "outside one it is",
			recs: []reliability.Record{lockFailed(1, "a", 6000, "dial tcp: connection refused")},
			obs:  fakeObserved{faults: []faultWindow{{at(1000), at(5000)}}},
			want: "connection refused",
		},
		{
			name: "an Unlock that timed out within one keeps Unlock's contract",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), unlockFailed(1, "a", 1, 511, errors.New("i/o timeout"))},
			obs:  fakeObserved{faults: []faultWindow{{at(300), at(5000)}}},
		},
		{
			// With appendfsync always a restarted server kept the key.
			name: "an Unlock that found a hold lost before its key could expire is a violation within one too",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 205),
				unlockFailed(1, "a", 1, 206, fmt.Errorf("lockmw: lock lost: %q was gone at unlock", "a"))},
			obs:  fakeObserved{faults: []faultWindow{{at(100), at(5000)}}},
			want: "lock lost",
		},
		{
			name: "so is an Unlock after a loss that did not say so",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(reliability.Lost, 1, "a", 1, 900),
				{Kind: F, Pid: 1, Name: "a", Token: 1, Time: at(901), Note: reliability.UnlockAfterLossNote + "<nil>, want ErrLockLost"}},
			obs:  fakeObserved{faults: []faultWindow{{at(100), at(5000)}}},
			want: "want ErrLockLost",
		},
		{
			name:  "a recovery across a fault of a server or a proxy gets its length",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 3000), rec(E, 2, "a", 2, 3010)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{faults: []faultWindow{{at(500), at(2500)}}},
		},
		{
			name:  "but no more",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 3000), rec(E, 2, "a", 2, 3010)},
			kills: []kill{{pid: 1, at: at(100)}},
			obs:   fakeObserved{faults: []faultWindow{{at(500), at(1000)}}},
			want:  "acquired again only",
		},
		{
			name: "nor does a pause excuse a hold whose key was still renewed",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 1, 330), paused(1, 400, 500), rec(E, 1, "a", 1, 1200),
				start(2, "a", 2, 1100), rec(E, 2, "a", 2, 1110)},
			want: "overlaps",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := check(append(helloClients(1, 2, 3), tc.recs...), tc.kills, timeout, at(10_000), tc.obs)
			if tc.want == "" {
				assert.Empty(t, rep.Violations)
				return
			}
			require.NotEmpty(t, rep.Violations)
			for _, v := range rep.Violations {
				assert.Contains(t, v, tc.want)
			}
		})
	}
}

// lockFailed is the Fail record of a Lock that returned an error.
func lockFailed(pid int, name string, ms int, err string) reliability.Record {
	return reliability.Record{Kind: reliability.Fail, Pid: pid, Name: name, Time: at(ms), Note: "lock: " + err}
}

// startField is a Start record with the hold's field in its Note.
func startField(pid int, name string, tok int64, ms int, field string) reliability.Record {
	r := start(pid, name, tok, ms)
	r.Note = reliability.StartNote(field, false)
	return r
}

func TestStartNoteRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field  string
		waited bool
	}{{"c:1", false}, {"c:1", true}, {"", true}, {"", false}} {
		f, w := reliability.ParseStartNote(reliability.StartNote(tc.field, tc.waited))
		assert.Equal(t, tc.field, f)
		assert.Equal(t, tc.waited, w)
	}
	assert.False(t, strings.HasSuffix(reliability.StartNote("", true), " "))
}
