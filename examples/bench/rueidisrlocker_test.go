package main

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// rlock on rueidis runs in the parallel scenario under its -lock names,
// each with a line of its own, its commands counted.
func TestParallelRunsRlockOnRueidis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{parallelScenario}
	cfg.locks = []string{rueidisKind, rueidisAutoKind}
	cfg.goroutines, cfg.duration, cfg.parRounds, cfg.settle = 4, 200*time.Millisecond, 2, 300*time.Millisecond
	rep := runJSON(t, cfg)
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Lock] = true
		if r.Lock == rueidisKind || r.Lock == rueidisAutoKind {
			if m := r.Metrics; m["acquisitions"] < 1 || m["redis_cpu_us_per_acq"] <= 0 {
				t.Errorf("%s: %v", r.Lock, m)
			}
		}
	}
	if !seen[rueidisKind] || !seen[rueidisAutoKind] {
		t.Errorf("results for %v, want %s and %s", seen, rueidisKind, rueidisAutoKind)
	}
}

// The client kinds are -lock names, not part of -lock all.
func TestClientKindsAreLockNamesButNotAll(t *testing.T) {
	t.Parallel()
	if _, err := parseLocks(rueidisKind + "," + rueidisAutoKind); err != nil {
		t.Errorf("parseLocks: %v", err)
	}
	all, _ := parseLocks("all")
	for _, k := range all {
		if k == rueidisKind || k == rueidisAutoKind {
			t.Errorf("-lock all has %s", k)
		}
	}
}
