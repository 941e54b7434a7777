package main

import (
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
)

// A short contended run with peers gives each its row, counts their
// commands (rueidislock's through its counting wrapper) and ends with the
// compare line. It checks no figure against a budget: only that each lock
// took turns and was measured.
func TestContendedRowsForEveryPeer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"contended"}
	cfg.locks = []string{"rlock", "redsync-1ms", "redislock-1ms", "rueidislock", "setnx"}
	rep := runJSON(t, cfg)
	if got, want := len(rep.Results), len(cfg.locks)+1; got != want {
		t.Fatalf("%d results, want one per lock and the compare line: %+v", got, rep.Results)
	}
	for _, lock := range cfg.locks {
		m := find(t, rep, "contended", lock).Metrics
		if m["acquisitions"] < 1 || m["ping_p50_us"] <= 0 {
			t.Errorf("%s: %v acquisitions, PING p50 %vµs", lock, m["acquisitions"], m["ping_p50_us"])
		}
		if c := m["client_cmds_per_acq"]; c < 2 {
			t.Errorf("%s: %v client commands per acquisition, want at least 2 (take and release)", lock, c)
		}
	}
	r := find(t, rep, "compare", "rlock")
	if got := r.Params["against"]; got != "redsync-1ms,redislock-1ms,rueidislock,setnx" {
		t.Logf("compared against %q (a peer without a hand-off in so short a run is left out)", got)
	}
	var names []string
	for _, tg := range r.Targets {
		names = append(names, tg.Name)
	}
	if !strings.HasPrefix(strings.Join(names, ","), "hand-off p50<=2.5×PING,") {
		t.Errorf("targets %q", names)
	}
}

// compareContended judges rlock's row against the best peer of each figure
// and leaves out a peer that made no hand-off.
func TestCompareContended(t *testing.T) {
	t.Parallel()
	row := func(lock string, m map[string]float64) *result {
		r := newResult("contended", lock)
		r.Metrics = m
		return r
	}
	rl := row("rlock", map[string]float64{"handoffs": 100, "handoff_p50_us": 200, "handoff_p99_us": 900, "ping_p50_us": 100,
		"hold_mean_us": 1000, "acquisitions_per_sec": 650, "redis_cpu_us_per_acq": 30, "client_cmds_per_acq": 3, "acq_per_worker_max_over_min": 1.2})
	poll := row("poll", map[string]float64{"handoffs": 100, "handoff_p50_us": 300, "handoff_p99_us": 800, "ping_p50_us": 100,
		"acquisitions_per_sec": 500, "redis_cpu_us_per_acq": 20})
	idle := row("redsync", map[string]float64{"handoffs": 0, "handoff_p50_us": 0})
	r := compareContended([]*result{rl, poll, idle, skipped("many-held", "poll", "why")})
	if r == nil || r.Params["against"] != "poll" {
		t.Fatalf("compare = %+v, want one against poll", r)
	}
	want := map[string]bool{
		"hand-off p50<=2.5×PING":                      true, // 2×
		"hand-off p50<every peer's (best poll 300µs)": true,
		"hand-off p99<every peer's (best poll 800µs)": false,
		"acq/s>=1.4×poll's (700)":                     false, // 1.4×500 < 0.9×1e6/1100
		"redis CPU/acq<=2×poll's":                     true,
		"cmds/acq<=4":                                 true,
		"max/min<=3":                                  true,
	}
	if len(r.Targets) != len(want) {
		t.Errorf("targets %+v, want %d", r.Targets, len(want))
	}
	for _, tg := range r.Targets {
		if met, ok := want[tg.Name]; !ok || met != tg.Met {
			t.Errorf("target %q met=%v, want known and met=%v", tg.Name, tg.Met, met)
		}
	}
	if compareContended([]*result{poll}) != nil {
		t.Error("a compare line without rlock's row")
	}
}
