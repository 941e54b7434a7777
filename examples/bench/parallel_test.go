package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// The parallel scenario runs every lock (rlock with and without batching)
// and both floors in each round on
// goroutines of their own, and compares rlock with them round by round.
// The wait for the keys to expire is cut short: rlock's unlock latches
// (~13 s) are still there after it, and the line says so.
func TestParallelRunsEveryLockAndBothFloorsInEachRound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{parallelScenario}
	cfg.locks = []string{"rlock", "rueidislock"}
	cfg.goroutines, cfg.duration, cfg.parRounds, cfg.settle = 4, 200*time.Millisecond, 2, 300*time.Millisecond
	rep := runJSON(t, cfg)

	kinds := []string{"rlock", unbatchedKind, "rueidislock", "setnx", autopipelineKind}
	if got, want := len(rep.Results), len(kinds)+1; got != want {
		t.Fatalf("%d results, want %d (a line per lock and the comparison): %+v", got, want, rep.Results)
	}
	for i, kind := range kinds {
		r := rep.Results[i]
		m := r.Metrics
		if r.Scenario != parallelScenario || r.Lock != kind {
			t.Fatalf("result %d is %s %s, want %s %s", i, r.Scenario, r.Lock, parallelScenario, kind)
		}
		if m["acquisitions"] < 1 || m["p50_us"] <= 0 || m["p99_us"] < m["p50_us"] || m["redis_cpu_us_per_acq"] <= 0 {
			t.Errorf("%s: %v", kind, m)
		}
		if got := len(r.Breakdown["acquisitions_per_sec_per_round"]); got != cfg.parRounds {
			t.Errorf("%s: %d rounds of acquisitions/s, want %d", kind, got, cfg.parRounds)
		}
		// A floor's pair is one command to lock and one to unlock, on the
		// client and on the server; the locks' scripts run more inside, and
		// a stalled rueidislock call (stallLimit) sends commands for none.
		// rlock's batched Unlocks share one run of the release script per
		// pipeline: at least its RESTORE per acquisition on the client.
		// The server counts every command of the run: a connection the
		// pool dials mid-run on a loaded machine (HELLO, CLIENT SETINFO)
		// adds a few in thousands there, never to the client's count.
		floor := kind == "setnx" || kind == autopipelineKind
		for _, key := range []string{"client_cmds_per_acq", "server_cmds_per_acq"} {
			least, most := 2.0, 2.0
			if kind == "rlock" && key == "client_cmds_per_acq" {
				least = 1
			}
			if key == "server_cmds_per_acq" {
				most = 2.01
			}
			if v := m[key]; v < least || (floor && v > most) {
				t.Errorf("%s: %s = %v, want %v (more for a lock)", kind, key, v, least)
			}
		}
		// rlock's unlock latches outlive the 300 ms wait; the floors leave
		// nothing behind.
		if alive := m["keys_alive"]; (kind == "rlock" && alive == 0) || (floor && alive != 0) {
			t.Errorf("%s: %v keys alive after the wait", kind, alive)
		}
	}

	c := rep.Results[len(kinds)]
	if c.Scenario != "parallel-compare" || c.Lock != "rlock" || len(c.Targets) != len(parallelTargets) {
		t.Fatalf("comparison %s %s with targets %+v, want parallel-compare rlock with %d", c.Scenario, c.Lock, c.Targets, len(parallelTargets))
	}
	// rueidislock may stall in a whole round on a loaded machine (0
	// acquisitions: an infinite ratio, -1 in JSON); the floors do not.
	for _, key := range []string{"acq_per_sec_rlock_over_setnx", "acq_per_sec_rlock_over_rueidislock", "acq_per_sec_rlock_over_setnx-autopipeline"} {
		median, ok := c.Metrics[key+"_median"]
		if got := len(c.Breakdown[key+"_per_round"]); got != cfg.parRounds || !ok || (median <= 0 && !strings.Contains(key, "rueidislock")) {
			t.Errorf("%s: median %v of %v, want a ratio per round", key, median, c.Breakdown[key+"_per_round"])
		}
	}
}

// The comparison judges the median of the per-round ratios, not the ratio
// of the medians, and prints each ratio.
func TestParallelCompareTakesTheMedianOfPerRoundRatios(t *testing.T) {
	t.Parallel()
	round := func(acqs int, cpu time.Duration) *parRound {
		return &parRound{loadRun: loadRun{pairs: make([]time.Duration, acqs), elapsed: time.Second}, runCPU: cpu}
	}
	rs := parallelRuns{
		plan: planParallel(parallelScenario, []string{"rlock"}),
		byKind: map[string][]*parRound{
			// rlock/setnx acq/s per round: 1.5, 0.5, 1.25; median 1.25.
			"rlock": {round(300, 3*time.Millisecond), round(100, time.Millisecond), round(500, 5*time.Millisecond)},
			"setnx": {round(200, time.Millisecond), round(200, time.Millisecond), round(400, 4*time.Millisecond)},
		},
		loads: []string{"0.50 0.40 0.30", "0.60 0.40 0.30", "0.70 0.40 0.30"},
	}
	c := compareParallel(rs)
	if got := c.Metrics["acq_per_sec_rlock_over_setnx_median"]; got != 1.25 {
		t.Errorf("acq/s median ratio = %v, want 1.25", got)
	}
	// CPU per acquisition: 10µs/5µs, 10µs/5µs, 10µs/10µs: median 2.
	if got := c.Metrics["redis_cpu_per_acq_rlock_over_setnx_median"]; got != 2 {
		t.Errorf("redis CPU/acq median ratio = %v, want 2", got)
	}
	// Against setnx only: rueidislock and the auto-pipelined floor did not run.
	if len(c.Targets) != 3 || !c.Targets[0].Met || c.Targets[1].Met {
		t.Errorf("targets %+v, want acq/s met, CPU missed, p99", c.Targets)
	}
	text := c.text()
	for _, want := range []string{"acq/s rlock/setnx\tmedian 1.25\t(rounds 1.50 0.50 1.25)\ttarget >=1.2 met", "0.50 0.40 0.30 | 0.60 0.40 0.30", "gomaxprocs="} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison's text lacks %q:\n%s", want, text)
		}
	}
}

func TestParallelKindsRunEachLockOnceThenTheFloors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ locks, want string }{
		{strings.Join(lockKinds, ","), "rlock,rlock-nobatch,redsync,redislock-1ms,rueidislock,poll,setnx,setnx-autopipeline"},
		{"redislock-100ms,rlock", "redislock-1ms,rlock,rlock-nobatch,setnx,setnx-autopipeline"},
		{"setnx", "setnx,setnx-autopipeline"},
	} {
		if got := strings.Join(parallelKinds(strings.Split(c.locks, ",")), ","); got != c.want {
			t.Errorf("parallelKinds(%s) = %s, want %s", c.locks, got, c.want)
		}
	}
	if !slices.Contains(lockKinds, "setnx") || slices.Contains(lockKinds, autopipelineKind) {
		t.Errorf("lockKinds = %v: the auto-pipelined floor runs in parallel only", lockKinds)
	}
}
