package reliability_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 123456789)
	for _, r := range []reliability.Record{
		{Kind: reliability.Start, Pid: 42, Name: "a b \"c\"", Token: 7, Time: now, Begin: now.Add(-time.Second), Sent: now.Add(-time.Millisecond)},
		{Kind: reliability.Lost, Pid: 1, Name: "注文", Token: 1, Time: now, Note: "lockmw: lock lost: x\ny"},
		{Kind: reliability.Hello, Pid: 3, Note: "client-id"},
	} {
		got, err := reliability.ParseRecord(r.String())
		require.NoError(t, err)
		assert.True(t, got.Time.Equal(r.Time) && got.Begin.Equal(r.Begin) && got.Sent.Equal(r.Sent), "times of %v", r)
		got.Time, got.Begin, got.Sent = r.Time, r.Begin, r.Sent
		assert.Equal(t, r, got)
	}
	for _, bad := range []string{"", "S 1 2 3", "S x 2 3 4 5 \"n\" \"\"", "S 1 2 3 4 5 n \"\"", "S 1 2 3 4 5 \"n\" note"} {
		_, err := reliability.ParseRecord(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestLogWritesWholeLinesWithPid(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	lg := reliability.NewLog(&buf, 99)
	lg.Write(reliability.Record{Kind: reliability.End, Name: "n", Token: 3, Time: time.Unix(1, 0)})
	require.NoError(t, lg.Err())
	line := strings.TrimSuffix(buf.String(), "\n")
	assert.NotContains(t, line, "\n")
	r, err := reliability.ParseRecord(line)
	require.NoError(t, err)
	assert.Equal(t, 99, r.Pid)
}

// at is a moment of a synthetic run: t0 plus ms milliseconds.
func at(ms int) time.Time {
	return time.Unix(1_700_000_000, 0).Add(time.Duration(ms) * time.Millisecond)
}

func start(pid int, name string, tok int64, ms int) reliability.Record {
	return reliability.Record{Kind: reliability.Start, Pid: pid, Name: name, Token: tok, Time: at(ms), Begin: at(ms - 1), Sent: at(ms - 1)}
}

func rec(k reliability.Kind, pid int, name string, tok int64, ms int) reliability.Record {
	return reliability.Record{Kind: k, Pid: pid, Name: name, Token: tok, Time: at(ms)}
}

func hello(pids ...int) []reliability.Record {
	var rs []reliability.Record
	for _, p := range pids {
		rs = append(rs, reliability.Record{Kind: reliability.Hello, Pid: p})
	}
	return rs
}

// The checker must find every kind of violation it claims to prove absent;
// a checker that cannot fail proves nothing.
func TestCheckerFindsViolations(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	E, R, L := reliability.End, reliability.Renew, reliability.Lost
	for _, tc := range []struct {
		name  string
		recs  []reliability.Record
		kills []kill
		want  string // substring of every violation; "" for none
	}{
		{
			name: "holds one after the other are fine",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), start(2, "a", 2, 11), rec(E, 2, "a", 2, 20), start(1, "b", 1, 5), rec(E, 1, "b", 1, 30)},
		},
		{
			name: "two holds of a name that overlap are a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), start(2, "a", 2, 9), rec(E, 2, "a", 2, 20)},
			want: "overlaps",
		},
		{
			name: "a hold inside a longer one is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 100), start(2, "a", 2, 10), rec(E, 2, "a", 2, 20), start(3, "a", 3, 50), rec(E, 3, "a", 3, 60)},
			want: "overlaps",
		},
		{
			name:  "a killed holder keeps the name until its last renewal plus the timeout",
			recs:  []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 1, 333), start(2, "a", 2, 1200), rec(E, 2, "a", 2, 1210)},
			kills: []kill{{pid: 1, at: at(400)}},
			want:  "overlaps",
		},
		{
			name:  "after the killed holder's key could have expired the name is free",
			recs:  []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 1, 333), start(2, "a", 2, 1340), rec(E, 2, "a", 2, 1350)},
			kills: []kill{{pid: 1, at: at(400)}},
		},
		{
			name:  "a slow recovery is a violation",
			recs:  []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 1800), rec(E, 2, "a", 2, 1810)},
			kills: []kill{{pid: 1, at: at(100)}},
			want:  "acquired again only",
		},
		{
			name:  "a name never acquired again is a violation",
			recs:  []reliability.Record{start(1, "a", 1, 0)},
			kills: []kill{{pid: 1, at: at(100)}},
			want:  "never acquired again",
		},
		{
			name: "a lost hold does not count as overlapping",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(L, 1, "a", 1, 1500), start(2, "a", 2, 1000), rec(E, 2, "a", 2, 1100)},
		},
		{
			name: "tokens that do not increase are a violation",
			recs: []reliability.Record{start(1, "a", 5, 0), rec(E, 1, "a", 5, 10), start(2, "a", 4, 20), rec(E, 2, "a", 4, 30)},
			want: "acquired after token",
		},
		{
			// pid 2's Lock was called before pid 1's returned with token 5:
			// Redis may have handed out 4 first, its Lock returning late.
			name: "a smaller token whose Lock was called before the larger one's returned is no violation",
			recs: []reliability.Record{start(1, "a", 5, 20), rec(E, 1, "a", 5, 30), {Kind: reliability.Start, Pid: 2, Name: "a", Token: 4, Time: at(40), Begin: at(10), Sent: at(10)}, rec(E, 2, "a", 4, 50)},
		},
		{
			name: "a lost hold's token still counts",
			recs: []reliability.Record{start(1, "a", 5, 0), rec(L, 1, "a", 5, 10), start(2, "a", 5, 20), rec(E, 2, "a", 5, 30)},
			want: "acquired after token",
		},
		{
			name: "a hold that never ended in a live process is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0)},
			want: "never ended",
		},
		{
			name: "an end without a start is a violation",
			recs: []reliability.Record{rec(E, 1, "a", 1, 10)},
			want: "never started",
		},
		{
			name: "a renewal of a hold with no token is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 0, 300), rec(E, 1, "a", 1, 400)},
			want: "renewed a hold with no token",
		},
		{
			name: "a failed call is a violation",
			recs: []reliability.Record{{Kind: reliability.Fail, Pid: 1, Name: "a", Note: "unlock: boom"}},
			want: "unlock: boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := check(append(hello(1, 2, 3), tc.recs...), tc.kills, timeout, at(10_000), nil)
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

func TestCheckerFigures(t *testing.T) {
	t.Parallel()
	E, R, L := reliability.End, reliability.Renew, reliability.Lost
	recs := append(hello(1, 2), start(1, "a", 1, 0), rec(R, 1, "a", 1, 300), rec(R, 1, "a", 1, 600),
		start(2, "a", 2, 1700), rec(E, 2, "a", 2, 1710),
		start(2, "b", 1, 0), rec(L, 2, "b", 1, 1100), start(2, "b", 2, 1050), rec(E, 2, "b", 2, 1060)) // b's key could expire at 999 ms, its loss noticed late
	rep := check(recs, []kill{{pid: 1, at: at(650)}}, time.Second, at(5000), nil)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, 2, rep.Processes)
	assert.Equal(t, 4, rep.Acquisitions)
	assert.Equal(t, 2, rep.Renewals)
	assert.Equal(t, 1, rep.Lost)
	assert.Equal(t, 1, rep.LateNotices)
	assert.Equal(t, 1, rep.Kills)
	assert.Equal(t, 1, rep.KillsHolding)
	assert.Equal(t, 1050*time.Millisecond, rep.WorstRecovery)
	assert.Equal(t, 101*time.Millisecond, rep.MinSlack, "1700 - (600 + 1000 - 1)")
}

// A hand-off is a release followed by the acquisition of a waiter that was
// already waiting; a name that lay idle until a later Lock is none.
func TestCheckerHandoffsAreToWaiters(t *testing.T) {
	t.Parallel()
	E := reliability.End
	waiting := start(2, "a", 2, 900) // Lock called at 899, before the release at 10
	waiting.Begin = at(5)
	recs := append(hello(1, 2, 3), start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), waiting, rec(E, 2, "a", 2, 910),
		start(3, "a", 3, 1700), rec(E, 3, "a", 3, 1710)) // Lock called at 1699: the name was idle
	rep := check(recs, nil, time.Second, at(5000), nil)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, []time.Duration{890 * time.Millisecond}, rep.Handoffs)
	assert.Equal(t, 1, rep.SlowHandoffs)
}

// An Unlock that reports a loss of lockmw's loss timer (no renewal
// confirmed until the key could have expired) before the key's earliest
// expiry is judged by lockmw's own bound: the renewals whose replies were
// in when the hold was ended, the drift margin. One that came earlier than
// that bound lost a hold lockmw knew to be renewed: a violation.
func TestCheckerJudgesTimerLosses(t *testing.T) {
	t.Parallel()
	const timeout = time.Second // claim window 200ms
	E, R, D := reliability.End, reliability.Renew, reliability.Dropped
	timerLoss := reliability.UnlockFailedNote + `lockmw: lock lost: renewals of "a" failed until the key could have expired`
	unlock := func(ms int, note string) reliability.Record {
		return reliability.Record{Kind: reliability.Fail, Pid: 1, Name: "a", Token: 1, Time: at(ms), Note: note}
	}
	renew := func(sent, settled int, note string) reliability.Record {
		r := rec(R, 1, "a", 1, sent)
		r.Begin, r.Note = at(settled), note
		return r
	}
	handed := start(1, "a", 1, 1) // handed over: its claim window from its last attempt, sent at 0
	handed.Note = reliability.StartNote("c:1", true)
	for _, tc := range []struct {
		name string
		recs []reliability.Record
		want string // substring of the violation; "" for none
	}{
		{
			name: "a claim whose reply came after the claim window ran out did not count for lockmw",
			recs: []reliability.Record{handed, renew(63, 300, ""), rec(D, 1, "a", 1, 196), rec(E, 1, "a", 1, 190), unlock(200, timerLoss)},
		},
		{
			name: "a claim whose reply was in before lockmw ended the hold counted",
			recs: []reliability.Record{handed, renew(63, 100, ""), rec(D, 1, "a", 1, 196), rec(E, 1, "a", 1, 190), unlock(200, timerLoss)},
			want: "before its own bound allowed",
		},
		{
			name: "lockmw ends a hold its drift margin before the key's earliest expiry",
			recs: []reliability.Record{start(1, "a", 1, 0), renew(333, 340, ""), renew(666, 999, reliability.RenewFailedNote),
				rec(E, 1, "a", 1, 1000), rec(D, 1, "a", 1, 1322), unlock(1323, timerLoss)},
		},
		{
			name: "without a Dropped record the Unlock's return is the loss",
			recs: []reliability.Record{start(1, "a", 1, 0), renew(333, 340, ""), rec(E, 1, "a", 1, 1000), unlock(1323, timerLoss)},
		},
		{
			name: "a loss timer that fired a renewal interval early is a violation",
			recs: []reliability.Record{start(1, "a", 1, 0), renew(333, 340, ""), rec(E, 1, "a", 1, 690), rec(D, 1, "a", 1, 700), unlock(701, timerLoss)},
			want: "before its own bound allowed",
		},
		{
			name: "a loss that a renewal found before the key could expire is no timer's",
			recs: []reliability.Record{start(1, "a", 1, 0), renew(333, 340, ""), rec(E, 1, "a", 1, 1000),
				unlock(1323, reliability.UnlockFailedNote+`lockmw: lock lost: renewal found "a" gone or someone else's`)},
			want: "before its key could expire",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := check(append(hello(1), tc.recs...), nil, timeout, at(10_000), nil)
			if tc.want == "" {
				assert.Empty(t, rep.Violations)
				assert.Equal(t, 1, rep.TimerLosses)
				return
			}
			require.Len(t, rep.Violations, 1)
			assert.Contains(t, rep.Violations[0], tc.want)
		})
	}
}

// lockmw's batcher sends an acquisition that finds a round trip under way
// when that round trip returns: its loss timer counts from its clock reading
// at the call, which may come long before the send the recorder saw when
// Redis or the machine stalled meanwhile (TestCrashMultiLock at a CPU
// pressure of 72%, its sampler deaf for 7 s of 16: a timer loss 418 ms
// before the bound then allowed). The bound counts the stalls in the call,
// and never starts before Lock was called.
func TestCheckerTimerLossAfterAQueuedSend(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	timerLoss := reliability.UnlockFailedNote + `lockmw: lock lost: renewals of "a" failed until the key could have expired`
	queued := start(1, "a", 1, 460)
	queued.Begin, queued.Sent = at(0), at(450) // Lock called at 0, its script sent at 450
	recs := append(hello(1), queued, rec(reliability.End, 1, "a", 1, 900), rec(reliability.Dropped, 1, "a", 1, 988),
		reliability.Record{Kind: reliability.Fail, Pid: 1, Name: "a", Token: 1, Time: at(990), Note: timerLoss})

	rep := check(recs, nil, timeout, at(10_000), nil)
	require.Len(t, rep.Violations, 1, "no stall explains a clock read 450 ms before the send")
	assert.Contains(t, rep.Violations[0], "before its own bound allowed")

	rep = check(recs, nil, timeout, at(10_000), fakeObserved{stalls: []stall{{at(20), at(440)}}})
	assert.Empty(t, rep.Violations, "Redis stalled for 420 ms of the call")
	assert.Equal(t, 1, rep.TimerLosses)

	early := queued
	early.Begin = at(200) // lockmw read its clock at 200 at the earliest
	recs[1] = early
	rep = check(recs, nil, timeout, at(10_000), fakeObserved{stalls: []stall{{at(20), at(440)}}})
	require.Len(t, rep.Violations, 1, "a loss before Lock's call plus the TTL is early whatever stalled")
	assert.Contains(t, rep.Violations[0], "before its own bound allowed")
}

// A recovery is judged against a bound its next holder's own pauses extend:
// a waiter that did not run cannot take the name.
func TestCheckerRecoveryBoundCountsTheNextHoldersPauses(t *testing.T) {
	t.Parallel()
	E := reliability.End
	slow := []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 1800), rec(E, 2, "a", 2, 1810)}
	kills := []kill{{pid: 1, at: at(100)}}
	rep := check(append(hello(1, 2), slow...), kills, time.Second, at(5000), nil)
	require.Len(t, rep.Violations, 1, "1.7s after the kill, over 1.333s")
	assert.Contains(t, rep.Violations[0], "acquired again only")

	paused := reliability.Record{Kind: reliability.Pause, Pid: 2, Begin: at(500), Time: at(1200)}
	rep = check(append(hello(1, 2), append(slow, paused)...), kills, time.Second, at(5000), nil)
	assert.Empty(t, rep.Violations, "the next holder did not run for 700ms of it")

	paused.Pid = 3 // another process's pause excuses nothing
	rep = check(append(hello(1, 2, 3), append(slow, paused)...), kills, time.Second, at(5000), nil)
	assert.Len(t, rep.Violations, 1)
}

// A recovery on a machine that kept its tasks from a CPU is slowed by the
// waits no stall shows (each under stallAfter): the bound counts the time
// some task waited for a CPU in the recovery, or the stalls when they are
// longer, not both (TestCrashMutualExclusion on rueidis workers, CPU
// pressure 72%: a recovery of 1.467s over a bound of 1.333s that no stall
// or pause explained).
func TestCheckerRecoveryBoundCountsCPUStarvation(t *testing.T) {
	t.Parallel()
	E := reliability.End
	slow := []reliability.Record{start(1, "a", 1, 0), start(2, "a", 2, 1600), rec(E, 2, "a", 2, 1610)}
	kills := []kill{{pid: 1, at: at(100)}}
	recs := append(hello(1, 2), slow...)
	rep := check(recs, kills, time.Second, at(5000), fakeObserved{})
	require.Len(t, rep.Violations, 1, "1.5s after the kill, over 1.333s")

	starved := fakeObserved{starve: []stall{{at(200), at(500)}}}
	rep = check(recs, kills, time.Second, at(5000), starved)
	assert.Empty(t, rep.Violations, "some task waited for a CPU for 300ms of it")

	both := fakeObserved{starve: []stall{{at(200), at(300)}}, stalls: []stall{{at(250), at(300)}}}
	rep = check(recs, kills, time.Second, at(5000), both)
	assert.Len(t, rep.Violations, 1, "100ms of waiting that covers a 50ms stall excuses 100ms, not 150ms")
}
