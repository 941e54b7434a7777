package reliability_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ms is a moment of a hand-made history, ms after a fixed origin.
func ms(n int) time.Time { return time.Unix(1_000_000, 0).Add(time.Duration(n) * time.Millisecond) }

// acq is an acquisition of "n" by hold (process hold) over [call, ret] ms,
// whose key expires no earlier than exp ms.
func acq(hold, token, call, ret, exp int) reliability.Op {
	return reliability.Op{Kind: reliability.OpAcquire, Name: "n", Process: hold, Hold: hold, Token: int64(token), Call: ms(call), Return: ms(ret), Expires: ms(exp)}
}

func rel(hold, call, ret int) reliability.Op {
	return reliability.Op{Kind: reliability.OpRelease, Name: "n", Process: hold, Hold: hold, Call: ms(call), Return: ms(ret)}
}

func lostRel(hold, call, ret int) reliability.Op {
	op := rel(hold, call, ret)
	op.Lost = true
	return op
}

func renew(hold, call, ret, exp int) reliability.Op {
	return reliability.Op{Kind: reliability.OpRenew, Name: "n", Process: hold, Hold: hold, Call: ms(call), Return: ms(ret), Expires: ms(exp)}
}

func shared(op reliability.Op) reliability.Op {
	op.Shared = true
	return op
}

func TestLinearizeHandMadeHistories(t *testing.T) {
	mutex := reliability.Spec{Kind: reliability.MutexKind}
	sem := reliability.Spec{Kind: reliability.SemaphoreKind, Permits: 2}
	rw := reliability.Spec{Kind: reliability.RWMutexKind}
	for _, tc := range []struct {
		name string
		spec reliability.Spec
		ops  []reliability.Op
		ok   bool
	}{
		{"one hold after another", mutex, []reliability.Op{acq(1, 1, 0, 1, 100), rel(1, 2, 3), acq(2, 2, 4, 5, 100), rel(2, 6, 7)}, true},
		{"an acquisition beside the release before it", mutex, []reliability.Op{acq(1, 1, 0, 1, 100), rel(1, 10, 11), acq(2, 2, 2, 12, 100)}, true},
		{"an overlap", mutex, []reliability.Op{acq(1, 1, 0, 1, 100), acq(2, 2, 2, 3, 100), rel(1, 4, 5)}, false},
		{"an acquisition that only fits outside its call", mutex, []reliability.Op{acq(1, 1, 0, 1, 100), rel(1, 10, 11), acq(2, 2, 2, 5, 100)}, false},
		{"a killed holder's key expired", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), acq(2, 2, 5, 12, 100)}, true},
		{"a killed holder's key before it could expire", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), acq(2, 2, 5, 8, 100)}, false},
		{"a renewal keeps the key", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), renew(1, 5, 5, 30), acq(2, 2, 20, 21, 100)}, false},
		{"a token going back", mutex, []reliability.Op{acq(1, 5, 0, 1, 100), rel(1, 2, 3), acq(2, 4, 4, 5, 100)}, false},
		{"unfenced holds have no token order", mutex, []reliability.Op{acq(1, -1, 0, 1, 100), rel(1, 2, 3), acq(2, -2, 4, 5, 100)}, true},
		{"a release by a non-holder that succeeded", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), acq(2, 2, 11, 12, 100), rel(1, 13, 14)}, false},
		{"a release that reported the loss", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), acq(2, 2, 11, 12, 100), lostRel(1, 13, 14)}, true},
		{"a renewal by a non-holder that succeeded", mutex, []reliability.Op{acq(1, 1, 0, 1, 10), acq(2, 2, 11, 12, 100), renew(1, 13, 13, 40)}, false},
		{"two permits held", sem, []reliability.Op{acq(1, -1, 0, 1, 100), acq(2, -2, 0, 1, 100), rel(1, 2, 3), acq(3, -3, 4, 5, 100)}, true},
		{"three permits of two", sem, []reliability.Op{acq(1, -1, 0, 1, 100), acq(2, -2, 0, 1, 100), acq(3, -3, 2, 3, 100)}, false},
		{"a permit expired", sem, []reliability.Op{acq(1, -1, 0, 1, 100), acq(2, -2, 0, 1, 10), acq(3, -3, 2, 12, 100), rel(1, 13, 14)}, true},
		{"the expired permit was the one released later", sem, []reliability.Op{acq(1, -1, 0, 1, 10), acq(2, -2, 0, 1, 10), acq(3, -3, 2, 12, 100), rel(1, 13, 14), rel(2, 13, 14)}, false},
		{"readers together", rw, []reliability.Op{shared(acq(1, -1, 0, 1, 100)), shared(acq(2, -2, 0, 1, 100)), rel(1, 2, 3), rel(2, 2, 3)}, true},
		{"a writer beside a reader", rw, []reliability.Op{shared(acq(1, -1, 0, 1, 100)), acq(2, 1, 2, 3, 100), rel(1, 4, 5)}, false},
		{"a force-unlock frees the name", mutex, []reliability.Op{acq(1, 1, 0, 1, 100),
			{Kind: reliability.OpForceUnlock, Name: "n", Process: 9, Call: ms(2), Return: ms(3)}, acq(2, 2, 4, 5, 100), lostRel(1, 6, 7)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := reliability.Check(tc.spec, tc.ops, 10*time.Second)
			require.NotEqual(t, porcupine.Unknown, v.Result, "timed out")
			want := porcupine.Illegal
			if tc.ok {
				want = porcupine.Ok
			}
			assert.Equal(t, want, v.Result)
		})
	}
}

// Names are checked apart: a hold of one does not stand in another's way.
func TestLinearizePartitionsByName(t *testing.T) {
	a, b := acq(1, 1, 0, 1, 100), acq(2, 1, 0, 1, 100)
	b.Name = "other"
	v := reliability.Check(reliability.Spec{Kind: reliability.MutexKind}, []reliability.Op{a, b}, 10*time.Second)
	assert.Equal(t, porcupine.Ok, v.Result)
}

// A rejected history is drawn as porcupine's HTML visualisation.
func TestLinearizeVisualizes(t *testing.T) {
	v := reliability.Check(reliability.Spec{Kind: reliability.MutexKind}, []reliability.Op{acq(1, 1, 0, 1, 100), acq(2, 2, 2, 3, 100)}, 10*time.Second)
	require.Equal(t, porcupine.Illegal, v.Result)
	path := filepath.Join(t.ArtifactDir(), "history.html")
	require.NoError(t, porcupine.VisualizePath(v.Model, v.Info, path))
	assert.FileExists(t, path)
}

// Recorded histories go through both checkers: what porcupine rejects,
// today's checker rejects too (the other way round is allowed: today's
// checker also judges liveness, which porcupine does not).
func TestLinearizeAgreesWithTodaysChecker(t *testing.T) {
	const timeout = time.Second
	E, R, L := reliability.End, reliability.Renew, reliability.Lost
	for _, tc := range []struct {
		name   string
		recs   []reliability.Record
		kills  []kill
		reject bool // porcupine's verdict
	}{
		{"one after the other", []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), start(2, "a", 2, 11), rec(E, 2, "a", 2, 20)}, nil, false},
		{"an overlap", []reliability.Record{start(1, "a", 1, 0), rec(E, 1, "a", 1, 10), start(2, "a", 2, 9), rec(E, 2, "a", 2, 20)}, nil, true},
		{"a token going back", []reliability.Record{start(1, "a", 5, 0), rec(E, 1, "a", 5, 10), start(2, "a", 4, 11), rec(E, 2, "a", 4, 20)}, nil, true},
		{"a killed holder's key before it could expire", []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 1, 333), start(2, "a", 2, 1200), rec(E, 2, "a", 2, 1210)},
			[]kill{{pid: 1, at: at(400)}}, true},
		{"a killed holder's key after it could expire", []reliability.Record{start(1, "a", 1, 0), rec(R, 1, "a", 1, 333), start(2, "a", 2, 1340), rec(E, 2, "a", 2, 1350)},
			[]kill{{pid: 1, at: at(400)}}, false},
		{"a lost hold", []reliability.Record{start(1, "a", 1, 0), rec(L, 1, "a", 1, 1500), start(2, "a", 2, 1000), rec(E, 2, "a", 2, 1100)}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(hello(1, 2), tc.recs...)
			rep := check(recs, tc.kills, timeout, at(5000), nil)
			v := reliability.Check(reliability.Spec{Kind: reliability.MutexKind}, linearOps(rep.run, recs, timeout, nil), 10*time.Second)
			require.NotEqual(t, porcupine.Unknown, v.Result)
			assert.Equal(t, tc.reject, v.Result == porcupine.Illegal, "porcupine's verdict")
			if v.Result == porcupine.Illegal {
				assert.NotEmpty(t, rep.Violations, "today's checker rejects it too")
			}
		})
	}
}
