package reliability_test

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waited is a Start record of an acquisition that waited (a permit maybe
// handed over with only a claim window).
func waited(pid int, name string, tok int64, ms int) reliability.Record {
	r := start(pid, name, tok, ms)
	r.Note = reliability.WaitedNote
	return r
}

// The semaphore checker must find every kind of violation it claims to
// prove absent, and only those. Two permits; holds are named by negative
// numbers, as permits have no token.
func TestSemCheckerFindsViolations(t *testing.T) {
	t.Parallel()
	const timeout, permits = time.Second, 2
	E, R, L := reliability.End, reliability.Renew, reliability.Lost
	for _, tc := range []struct {
		name  string
		recs  []reliability.Record
		kills []kill
		want  string // substring of every violation; "" for none
	}{
		{
			name: "as many holds at once as permits are fine",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(E, 1, "a", -1, 100), start(2, "a", -1, 10), rec(E, 2, "a", -1, 90), start(3, "b", -1, 20), rec(E, 3, "b", -1, 30)},
		},
		{
			name: "one hold more than permits at once is a violation",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(E, 1, "a", -1, 100), start(2, "a", -1, 10), rec(E, 2, "a", -1, 90), start(3, "a", -1, 50), rec(E, 3, "a", -1, 60)},
			want: "3 holds at",
		},
		{
			name: "a hold that starts as another ends does not overlap it",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(E, 1, "a", -1, 50), start(2, "a", -1, 10), rec(E, 2, "a", -1, 90), start(3, "a", -1, 50), rec(E, 3, "a", -1, 60)},
		},
		{
			name: "holds of different names do not count together",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(E, 1, "a", -1, 100), start(2, "a", -1, 10), rec(E, 2, "a", -1, 90), start(3, "b", -1, 50), rec(E, 3, "b", -1, 60)},
		},
		{
			name:  "a killed holder keeps its permit until its last renewal plus the timeout",
			recs:  []reliability.Record{start(1, "a", -1, 0), rec(R, 1, "a", -1, 333), start(2, "a", -1, 10), rec(E, 2, "a", -1, 2000), start(3, "a", -1, 1200), rec(E, 3, "a", -1, 1210)},
			kills: []kill{{pid: 1, at: at(400)}},
			want:  "killed, earliest expiry",
		},
		{
			name:  "after the killed holder's permit could have expired it is free",
			recs:  []reliability.Record{start(1, "a", -1, 0), rec(R, 1, "a", -1, 333), start(2, "a", -1, 10), rec(E, 2, "a", -1, 2000), start(3, "a", -1, 1340), rec(E, 3, "a", -1, 1350)},
			kills: []kill{{pid: 1, at: at(400)}},
		},
		{
			name:  "a killed holder that waited and never renewed keeps its permit only for the claim window",
			recs:  []reliability.Record{waited(1, "a", -1, 0), start(2, "a", -1, 10), rec(E, 2, "a", -1, 2000), start(3, "a", -1, 250), rec(E, 3, "a", -1, 260)},
			kills: []kill{{pid: 1, at: at(100)}},
		},
		{
			name:  "a killed holder that waited and renewed keeps its permit for the timeout",
			recs:  []reliability.Record{waited(1, "a", -1, 0), rec(R, 1, "a", -1, 50), start(2, "a", -1, 10), rec(E, 2, "a", -1, 2000), start(3, "a", -1, 250), rec(E, 3, "a", -1, 260)},
			kills: []kill{{pid: 1, at: at(100)}},
			want:  "3 holds at",
		},
		{
			name: "a lost hold counts until its permit could expire",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(L, 1, "a", -1, 1500), start(2, "a", -1, 10), rec(E, 2, "a", -1, 90), start(3, "a", -1, 50), rec(E, 3, "a", -1, 60)},
			want: "over 2 permits",
		},
		{
			name: "a lost hold does not count once its permit could expire",
			recs: []reliability.Record{start(1, "a", -1, 0), rec(L, 1, "a", -1, 1500), start(2, "a", -1, 1010), rec(E, 2, "a", -1, 1090), start(3, "a", -1, 1050), rec(E, 3, "a", -1, 1060)},
		},
		{
			name:  "a slow recovery of a name with every permit taken is a violation",
			recs:  []reliability.Record{start(1, "a", -1, 0), start(2, "a", -1, 10), rec(E, 2, "a", -1, 5000), start(3, "a", -1, 1800), rec(E, 3, "a", -1, 1810)},
			kills: []kill{{pid: 1, at: at(100)}},
			want:  "acquired again only",
		},
		{
			name:  "a late next acquisition of a name with a permit free at the kill is no recovery",
			recs:  []reliability.Record{start(1, "a", -1, 0), start(3, "a", -1, 1800), rec(E, 3, "a", -1, 1810)},
			kills: []kill{{pid: 1, at: at(100)}},
		},
		{
			name:  "a name never acquired again is a violation",
			recs:  []reliability.Record{start(1, "a", -1, 0)},
			kills: []kill{{pid: 1, at: at(100)}},
			want:  "never acquired again",
		},
		{
			name: "a hold that never ended in a live process is a violation",
			recs: []reliability.Record{start(1, "a", -1, 0)},
			want: "never ended",
		},
		{
			name: "a failed call is a violation",
			recs: []reliability.Record{{Kind: reliability.Fail, Pid: 1, Name: "a", Note: "unlock: boom"}},
			want: "unlock: boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := checkSem(append(hello(1, 2, 3), tc.recs...), tc.kills, permits, timeout, at(10_000), nil)
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

func TestSemCheckerFigures(t *testing.T) {
	t.Parallel()
	E, R, L := reliability.End, reliability.Renew, reliability.Lost
	recs := append(hello(1, 2, 3),
		// "a": pid 1 is killed at 650 holding a permit beside pid 2's; pid 3
		// gets one at 1700.
		start(1, "a", -1, 0), rec(R, 1, "a", -1, 300), rec(R, 1, "a", -1, 600),
		start(2, "a", -1, 10), rec(E, 2, "a", -1, 3000),
		start(3, "a", -1, 1700), rec(E, 3, "a", -1, 1710),
		// "b": one hold, beside one lost at 900 ms (it counts until then).
		start(2, "b", -2, 0), rec(L, 2, "b", -2, 900), start(3, "b", -2, 800), rec(E, 3, "b", -2, 810))
	rep := checkSem(recs, []kill{{pid: 1, at: at(650)}}, 2, time.Second, at(5000), nil)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, 3, rep.Processes)
	assert.Equal(t, 5, rep.Acquisitions)
	assert.Equal(t, 2, rep.Renewals)
	assert.Equal(t, 1, rep.Lost)
	assert.Equal(t, 1, rep.Kills)
	assert.Equal(t, 1, rep.KillsHolding)
	assert.Equal(t, 1, rep.Recoveries)
	assert.Equal(t, 1050*time.Millisecond, rep.WorstRecovery)
	assert.Equal(t, map[string]int{"a": 2, "b": 2}, rep.MostHeld)
}
