package reliability_test

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
)

// The read-write checker must find a write hold that overlaps any other
// hold, and let read holds overlap each other. Read holds are named by
// negative numbers, write holds by their fencing tokens.
func TestRWCheckerFindsViolations(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	E, R := reliability.End, reliability.Renew
	for _, tc := range []struct {
		name  string
		recs  []reliability.Record
		kills []kill
		want  string // substring of every violation; "" for none
	}{
		{"two reads overlap", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", -1, 10), rec(E, 2, "n", -1, 50), rec(E, 3, "n", -1, 60),
		}, nil, ""},
		{"a write after the reads", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", -1, 10), rec(E, 2, "n", -1, 50), rec(E, 3, "n", -1, 60),
			start(4, "n", 1, 61), rec(E, 4, "n", 1, 70), start(2, "n", -2, 71), rec(E, 2, "n", -2, 80),
		}, nil, ""},
		{"a write overlaps a read", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", 1, 10), rec(E, 2, "n", -1, 50), rec(E, 3, "n", 1, 60),
		}, nil, "overlaps"},
		{"a read overlaps a write", []reliability.Record{
			start(3, "n", 1, 0), start(2, "n", -1, 10), rec(E, 3, "n", 1, 50), rec(E, 2, "n", -1, 60),
		}, nil, "overlaps"},
		{"a write overlaps the longer of two reads", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", -1, 10), rec(E, 3, "n", -1, 20), start(4, "n", 1, 30),
			rec(E, 4, "n", 1, 40), rec(E, 2, "n", -1, 50),
		}, nil, "overlaps"},
		{"a read overlaps a write behind a shorter read", []reliability.Record{
			start(4, "n", 1, 0), rec(E, 4, "n", 1, 100), start(2, "n", -1, 101), rec(E, 2, "n", -1, 110),
			start(3, "n", 2, 111), rec(E, 3, "n", 2, 200), start(5, "n", -1, 150), rec(E, 5, "n", -1, 210),
		}, nil, "overlaps"},
		{"two writes overlap", []reliability.Record{
			start(2, "n", 1, 0), start(3, "n", 2, 10), rec(E, 2, "n", 1, 50), rec(E, 3, "n", 2, 60),
		}, nil, "overlaps"},
		{"a write before a killed reader's key could expire", []reliability.Record{
			start(2, "n", -1, 0), rec(R, 2, "n", -1, 400), start(3, "n", 1, 1300), rec(E, 3, "n", 1, 1310),
		}, []kill{{pid: 2, at: at(500)}}, "overlaps"},
		{"a write after a killed reader's key could expire", []reliability.Record{
			start(2, "n", -1, 0), rec(R, 2, "n", -1, 400), start(3, "n", 1, 1401), rec(E, 3, "n", 1, 1410),
		}, []kill{{pid: 2, at: at(500)}}, ""},
		{"a read beside a killed reader", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", -1, 600), rec(E, 3, "n", -1, 610), start(4, "n", 1, 1100), rec(E, 4, "n", 1, 1110),
		}, []kill{{pid: 2, at: at(500)}}, ""},
		{"a killed writer's name acquired again late", []reliability.Record{
			start(2, "n", 1, 0), start(3, "n", -1, 5000), rec(E, 3, "n", -1, 5010),
		}, []kill{{pid: 2, at: at(500)}}, "acquired again only"},
		{"a killed reader's name acquired again late: logged, not judged", []reliability.Record{
			start(2, "n", -1, 0), start(3, "n", 1, 5000), rec(E, 3, "n", 1, 5010),
		}, []kill{{pid: 2, at: at(500)}}, ""},
		{"write tokens decrease", []reliability.Record{
			start(2, "n", 2, 0), rec(E, 2, "n", 2, 10), start(3, "n", -1, 20), rec(E, 3, "n", -1, 30),
			start(3, "n", 1, 40), rec(E, 3, "n", 1, 50),
		}, nil, "acquired after token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recs := append(hello(1, 2, 3, 4, 5), tc.recs...)
			rep := checkRW(recs, tc.kills, timeout, at(100_000), nil)
			if tc.want == "" {
				assert.Empty(t, rep.Violations)
				return
			}
			assert.NotEmpty(t, rep.Violations)
			for _, v := range rep.Violations {
				assert.Contains(t, v, tc.want)
			}
		})
	}
}

// Read holds that overlap are counted, so that a run proves it exercised
// shared reads; the mutex checker counts none (every hold exclusive).
func TestRWCheckerCountsSharedReads(t *testing.T) {
	t.Parallel()
	E := reliability.End
	recs := append(hello(1, 2, 3), start(2, "n", -1, 0), start(3, "n", -1, 10), rec(E, 2, "n", -1, 50), rec(E, 3, "n", -1, 60))
	rep := checkRW(recs, nil, time.Second, at(100_000), nil)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, 1, rep.SharedOverlaps)
	rep = check(recs, nil, time.Second, at(100_000), nil)
	assert.NotEmpty(t, rep.Violations, "the mutex checker lets no two holds overlap")
	assert.Zero(t, rep.SharedOverlaps)
}
