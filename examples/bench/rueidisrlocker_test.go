package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// rlock on rueidis and on valkey-go, and valkeylock, run in the parallel
// scenario under their -lock names, each with a line of its own, their
// commands counted.
func TestParallelRunsRlockOnRueidis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{parallelScenario}
	cfg.locks = clientKinds
	cfg.goroutines, cfg.duration, cfg.parRounds, cfg.settle = 4, 200*time.Millisecond, 2, 300*time.Millisecond
	rep := runJSON(t, cfg)
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Lock] = true
		if slices.Contains(clientKinds, r.Lock) {
			if m := r.Metrics; m["acquisitions"] < 1 || m["redis_cpu_us_per_acq"] <= 0 {
				t.Errorf("%s: %v", r.Lock, m)
			}
		}
	}
	for _, k := range clientKinds {
		if !seen[k] {
			t.Errorf("results for %v, none for %s", seen, k)
		}
	}
}

// The client kinds are -lock names, not part of -lock all.
func TestClientKindsAreLockNamesButNotAll(t *testing.T) {
	t.Parallel()
	if _, err := parseLocks(strings.Join(clientKinds, ",")); err != nil {
		t.Errorf("parseLocks: %v", err)
	}
	all, _ := parseLocks("all")
	for _, k := range all {
		if slices.Contains(clientKinds, k) {
			t.Errorf("-lock all has %s", k)
		}
	}
}
