package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// rueidis's cluster client closes the connections a topology refresh
	// dropped 5 s later, on a goroutine of its own that its Close does not
	// stop (rueidis v1.0.79 cluster.go, _refresh): not a leak of ours.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

// tiny is a configuration that runs every scenario in a few seconds.
func tiny(addr string) config {
	cfg := defaultConfig()
	cfg.addr = addr
	cfg.locks = []string{"rlock"}
	cfg.n, cfg.runs = 40, 2
	cfg.workers, cfg.duration = 4, 300*time.Millisecond
	// A renewal every 1.5s: a round's scripts arrive together (within
	// half an interval) and every lock is renewed long before its TTL ends,
	// also on a loaded machine under the race detector (with a renewal
	// every 500ms, a 2-core machine at a load of 15 lost a hold: renewals
	// late by more than the 1.5s TTL).
	cfg.held, cfg.watchdog, cfg.rounds = 250, 4500*time.Millisecond, 2
	cfg.waiters = 40
	return cfg
}

func runJSON(t *testing.T, cfg config) report {
	t.Helper()
	ctx := testsupport.Ctx(t) // a safety net, not a budget: a fixed 60s broke beside a make stress
	cfg.json = true
	var out bytes.Buffer
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("the -json output does not parse: %v\n%s", err, out.String())
	}
	return rep
}

func find(t *testing.T, rep report, scenario, lock string) *result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Scenario == scenario && r.Lock == lock {
			return r
		}
	}
	t.Fatalf("no result for %s with %s", scenario, lock)
	return nil
}

// Not parallel: many-held counts the process's goroutines, which another
// test running meanwhile would change.
func TestEveryScenarioRunsAndReports(t *testing.T) {
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.locks = []string{"rlock", "poll"}
	// rwmutex: half reads, so that both kinds occur in a short run even on a
	// loaded machine, where the Mutex may do only a few dozen operations
	// (with 90 % reads, 60 operations have no write once in 550 runs).
	cfg.readShare = 0.5
	rep := runJSON(t, cfg)

	if rep.Machine.Redis == "" || rep.Machine.Redis == "?" || rep.Machine.OwnServer {
		t.Errorf("machine = %+v, want the redis version and own_server false with -addr", rep.Machine)
	}
	// rlock in every scenario, poll in uncontended, contended and
	// many-waiters and a skipped line in the others (semaphore and rwmutex:
	// two lines of rlock), then the compare line.
	if got, want := len(rep.Results), 19; got != want {
		t.Fatalf("%d results, want %d: %+v", got, want, rep.Results)
	}

	t.Run("uncontended times both kinds, two commands each, and Redisson's scripts beside rlock", func(t *testing.T) {
		for _, lock := range []string{"rlock", "poll"} {
			r := find(t, rep, "uncontended", lock)
			m := r.Metrics
			if m["p50_us"] <= 0 || m["floor_p50_us"] <= 0 || m["ratio_p50_median"] <= 0 {
				t.Errorf("%s: latencies missing: %v", lock, m)
			}
			hasRef := m["redisson_p50_us"] > 0 && m["redisson_ratio_p50_median"] > 0 && m["redisson_redis_cpu_us_per_op"] > 0
			if hasRef != (lock == "rlock") {
				t.Errorf("%s: the reference of Redisson's scripts is there: %v, want it with rlock only: %v", lock, hasRef, m)
			}
			for _, k := range []string{"client_cmds_per_op", "floor_client_cmds_per_op"} {
				if m[k] != 2 {
					t.Errorf("%s: %s = %v, want 2 (one command to lock, one to unlock)", lock, k, m[k])
				}
			}
			if len(r.Breakdown["ratio_per_run"]) != cfg.runs {
				t.Errorf("%s: ratios per run = %v, want %d", lock, r.Breakdown["ratio_per_run"], cfg.runs)
			}
			if want := map[string]int{"rlock": 1, "poll": 0}[lock]; len(r.Targets) != want {
				t.Errorf("%s: targets = %+v, want %d (the ratio, for rlock)", lock, r.Targets, want)
			}
		}
	})

	t.Run("contended counts every acquisition of every worker", func(t *testing.T) {
		for _, lock := range []string{"rlock", "poll"} {
			m := find(t, rep, "contended", lock).Metrics
			acqs := m["acquisitions"]
			if acqs < float64(cfg.workers) {
				t.Errorf("%s: %v acquisitions in %v with %d workers", lock, acqs, cfg.duration, cfg.workers)
			}
			if m["acq_per_worker_min"] > m["acq_per_worker_max"] || m["acq_per_worker_max"] > acqs {
				t.Errorf("%s: per worker min %v max %v of %v", lock, m["acq_per_worker_min"], m["acq_per_worker_max"], acqs)
			}
			if u := m["utilization"]; u <= 0 || u > 1 {
				t.Errorf("%s: utilization %v, want in (0, 1]", lock, u)
			}
			// Each acquisition takes at least one command and one release.
			if c := m["client_cmds_per_acq"]; c < 2 {
				t.Errorf("%s: %v client commands per acquisition, want at least 2", lock, c)
			}
			if m["server_cmds_per_acq"] < m["client_cmds_per_acq"] {
				t.Errorf("%s: commandstats %v < client commands %v per acquisition", lock, m["server_cmds_per_acq"], m["client_cmds_per_acq"])
			}
			if m["ping_p50_us"] <= 0 || m["ping_before_p50_us"] <= 0 || m["wait_p99_us"] <= 0 {
				t.Errorf("%s: missing PING or wait figures: %v", lock, m)
			}
			if m["handoffs"] > 0 && (m["handoff_p50_us"] < m["handoff_from_return_p50_us"] || m["handoff_p99_us"] < m["handoff_p50_us"]) {
				t.Errorf("%s: hand-off from the Unlock call p50 %v p99 %v, from its return p50 %v", lock, m["handoff_p50_us"], m["handoff_p99_us"], m["handoff_from_return_p50_us"])
			}
		}
		// Each client has its own hand-off channel: a hand-off reaches one connection.
		if got := find(t, rep, "contended", "rlock").Metrics["handoff_channel_subscribers"]; got != 1 {
			t.Errorf("connections per hand-off message = %v, want 1", got)
		}
	})

	t.Run("the peers are skipped in the rlock-only scenarios, once each", func(t *testing.T) {
		for _, sc := range []string{"many-held", "mixed", "trace", "rwmutex"} {
			if r := find(t, rep, sc, "poll"); r.Skipped == "" {
				t.Errorf("%s with poll: not skipped: %+v", sc, r)
			}
		}
	})

	// Not the waiting client's commands per wake-up: the hook counts a
	// command when it is sent, perhaps long before a pool connection is
	// free for it, so every command that took a lock may have been counted
	// before the first unlock.
	t.Run("many-waiters wakes the polling lock's waiters too", func(t *testing.T) {
		m := find(t, rep, "many-waiters", "poll").Metrics
		if m["wakeup_p50_us"] <= 0 || m["wakeup_max_us"] < m["wakeup_p99_us"] || m["waiter_cmds_per_wakeup"] < 0 {
			t.Errorf("poll's wake-up figures: %v", m)
		}
	})

	t.Run("the compare line judges rlock's contended row against poll's", func(t *testing.T) {
		r := find(t, rep, "compare", "rlock")
		if r.Params["against"] != "poll" {
			t.Errorf("compared against %q, want poll", r.Params["against"])
		}
		if len(r.Targets) != 7 {
			t.Errorf("targets: %+v, want 7", r.Targets)
		}
	})

	// No throughput threshold: on a loaded 2-core machine the ratio moves.
	t.Run("rwmutex does the same work on both kinds, readers sharing and no writer beside anyone", func(t *testing.T) {
		for _, sc := range []string{"rwmutex", "rwmutex-on-mutex"} {
			r := find(t, rep, sc, "rlock")
			m := r.Metrics
			if m["reads"] < 1 || m["writes"] < 1 || m["ops"] != m["reads"]+m["writes"] || m["ops_per_sec"] <= 0 {
				t.Errorf("%s: reads %v writes %v ops %v ops/s %v, want both kinds done", sc, m["reads"], m["writes"], m["ops"], m["ops_per_sec"])
			}
			if m["read_p50_us"] <= 0 || m["read_p99_us"] < m["read_p50_us"] || m["write_p50_us"] <= 0 || m["write_p99_us"] < m["write_p50_us"] {
				t.Errorf("%s: latencies %v", sc, m)
			}
			if m["violations"] != 0 || len(r.Targets) != 1 || !r.Targets[0].Met || !r.Targets[0].Hard {
				t.Errorf("%s: %v writers beside anyone, targets %+v", sc, m["violations"], r.Targets)
			}
			if got := len(r.Breakdown["ops_per_sec_per_round"]); got != cfg.rounds {
				t.Errorf("%s: %d rounds reported, want %d", sc, got, cfg.rounds)
			}
		}
		if got := find(t, rep, "rwmutex-on-mutex", "rlock").Metrics["most_readers"]; got != 1 {
			t.Errorf("most readers at once on the Mutex = %v, want 1", got)
		}
		rw := find(t, rep, "rwmutex", "rlock").Metrics
		if rw["most_readers"] < 2 {
			t.Errorf("most readers at once on the RWMutex = %v, want at least 2", rw["most_readers"])
		}
		if rw["ops_per_sec_over_mutex_median"] <= 0 {
			t.Errorf("ops/s over the Mutex's = %v", rw["ops_per_sec_over_mutex_median"])
		}
	})

	t.Run("many-held renews in scripts of 100 locks with no goroutine per lock", func(t *testing.T) {
		r := find(t, rep, "many-held", "rlock")
		m := r.Metrics
		limit := math.Ceil(float64(cfg.held) / 100)
		if got := m["renewal_scripts_per_interval"]; got < 1 || got > limit {
			t.Errorf("renewal scripts per interval = %v, want 1 to %v", got, limit)
		}
		if m["locks_renewed_per_interval"] != float64(cfg.held) || m["renewal_failures"] != 0 {
			t.Errorf("renewed %v per interval with %v failures, want %d and 0", m["locks_renewed_per_interval"], m["renewal_failures"], cfg.held)
		}
		if m["goroutines_n"] > m["goroutines_tenth"] {
			t.Errorf("goroutines at %d held = %v, at a tenth = %v", cfg.held, m["goroutines_n"], m["goroutines_tenth"])
		}
		if m["heap_per_lock_bytes"] <= 0 {
			t.Errorf("heap per lock = %v", m["heap_per_lock_bytes"])
		}
	})

	t.Run("many-waiters wakes each waiter through one subscription connection", func(t *testing.T) {
		r := find(t, rep, "many-waiters", "rlock")
		m := r.Metrics
		if m["pubsub_conns_waiter"] != 1 || m["pubsub_conns_holder"] != 0 {
			t.Errorf("pub/sub connections: waiter %v holder %v, want 1 and 0", m["pubsub_conns_waiter"], m["pubsub_conns_holder"])
		}
		if m["wakeup_p50_us"] <= 0 || m["wakeup_max_us"] < m["wakeup_p99_us"] {
			t.Errorf("wake-up figures: %v", m)
		}
		// Hand-off: a woken waiter holds the lock; at most one command
		// claims it (the watchdog batches claims that arrive together). On
		// a loaded machine a claim may need a second try now and then (40
		// waiters sent 41 scripts once, at a load of 15): a tenth more is
		// allowed, where a polling waiter sends several per wake-up.
		if v := m["waiter_cmds_per_wakeup"]; v < 0 || v > 1.1 {
			t.Errorf("waiter commands per wake-up = %v (%v), want at most 1.1 (the claim, now and then retried)", v, r.Breakdown["waiter_cmds"])
		}
	})
}

// The mixed scenario reports both sides of every pair. It does not check the
// targets: until rlock's release wakes Redisson's waiters, the Redisson side
// starves.
func TestMixedReportsBothSidesOfEachPair(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"mixed"}
	cfg.mixes = []mix{{1, 2}, {2, 1}}
	rep := runJSON(t, cfg)
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want one per pair: %+v", len(rep.Results), rep.Results)
	}
	for i, r := range rep.Results {
		mx := cfg.mixes[i]
		t.Run(mx.String(), func(t *testing.T) {
			if r.Scenario != "mixed" || r.Params["rlock"] != fmt.Sprint(mx.rlock) || r.Params["redisson"] != fmt.Sprint(mx.redisson) {
				t.Fatalf("result %d = %s %v, want mixed %s", i, r.Scenario, r.Params, mx)
			}
			m := r.Metrics
			if m["rlock_holds"]+m["redisson_holds"] != m["holds"] || m["holds"] < 1 {
				t.Errorf("holds: rlock %v + redisson %v != %v", m["rlock_holds"], m["redisson_holds"], m["holds"])
			}
			if m["overlapping_holds"] != 0 {
				t.Errorf("%v holds overlapped another", m["overlapping_holds"])
			}
			n := float64(mx.rlock + mx.redisson)
			for side, workers := range map[string]int{"rlock": mx.rlock, "redisson": mx.redisson} {
				if got, want := m[side+"_fair_share"], round(float64(workers)/n, 4); got != want {
					t.Errorf("%s fair share = %v, want %v", side, got, want)
				}
				if s := m[side+"_share"]; s < 0 || s > 1 {
					t.Errorf("%s share = %v", side, s)
				}
				gap := m[side+"_longest_gap_us"]
				if gap <= 0 || gap > float64(cfg.duration.Microseconds()) {
					t.Errorf("%s longest gap = %vµs in a %v run", side, gap, cfg.duration)
				}
				if m[side+"_wait_p50_us"] > m[side+"_wait_p99_us"] || m[side+"_wait_p99_us"] > m[side+"_wait_max_us"] {
					t.Errorf("%s waits: p50 %v p99 %v max %v", side, m[side+"_wait_p50_us"], m[side+"_wait_p99_us"], m[side+"_wait_max_us"])
				}
			}
			if got := len(r.Breakdown["holds_per_worker"]); got != mx.rlock+mx.redisson {
				t.Errorf("holds per worker: %v", r.Breakdown["holds_per_worker"])
			}
			var names []string
			for _, tg := range r.Targets {
				names = append(names, tg.Name)
			}
			if want := "redisson gap<=2s,redisson share>=0.25×fair,no overlapping holds"; strings.Join(names, ",") != want {
				t.Errorf("targets %q, want %q", names, want)
			}
		})
	}
}

// -mixed-permits runs the mixed scenario on a semaphore: both sides take
// permits, never more holders than permits.
func TestMixedOnASemaphore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"mixed"}
	cfg.mixes = []mix{{1, 1}}
	cfg.mixedPermits = 2
	rep := runJSON(t, cfg)
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1: %+v", len(rep.Results), rep.Results)
	}
	r := rep.Results[0]
	if r.Params["semaphore"] != "2" {
		t.Errorf("params %v, want semaphore=2", r.Params)
	}
	m := r.Metrics
	if m["rlock_holds"] < 1 || m["redisson_holds"] < 1 {
		t.Errorf("holds: rlock %v, redisson %v; want both sides", m["rlock_holds"], m["redisson_holds"])
	}
	if m["overlapping_holds"] != 0 {
		t.Errorf("%v holds began beside 2 others", m["overlapping_holds"])
	}
}

func TestTextOutputHasOneLinePerScenario(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"uncontended", "many-held"}
	cfg.locks = []string{"poll", "setnx"}
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "# ") || !strings.HasPrefix(lines[1], "# ground: direct to -addr; PING p50 ") ||
		!strings.HasPrefix(lines[5], "# load average") {
		t.Fatalf("want a header of two lines (the machine, the ground), three result lines and a footer, got:\n%s", out.String())
	}
	lines = lines[1:]
	for i, lock := range []string{"poll", "setnx"} {
		line := lines[1+i]
		if f := strings.Fields(line); len(f) < 2 || f[0] != "uncontended" || f[1] != lock || !strings.Contains(line, "p50 ratio median") {
			t.Errorf("uncontended line of %s: %q", lock, line)
		}
	}
	if !strings.HasPrefix(lines[3], "many-held poll,setnx skipped: rlock only") {
		t.Errorf("many-held with the peers should be one skipped line: %q", lines[3])
	}
}

func TestWithoutRedisServerItSaysHowToGetOne(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := run(context.Background(), defaultConfig(), io.Discard)
	if !errors.Is(err, errNoServer) {
		t.Fatalf("run without redis-server on PATH = %v, want errNoServer", err)
	}
	for _, s := range []string{"make test", "apt-get install redis-server", "-addr"} {
		if !strings.Contains(noServerHelp, s) {
			t.Errorf("the help does not mention %q", s)
		}
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	t.Run("the defaults are the documented ones", func(t *testing.T) {
		cfg, _, err := parseFlags(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := defaultConfig()
		if cfg.n != 2000 || cfg.runs != 5 || cfg.workers != 16 || cfg.hold != time.Millisecond ||
			cfg.think != time.Millisecond || cfg.duration != 3*time.Second || cfg.held != 10000 ||
			cfg.watchdog != 3*time.Second || cfg.rounds != 3 || cfg.waiters != 1000 ||
			cfg.pollMin != time.Millisecond || cfg.pollMax != 5*time.Millisecond ||
			len(cfg.scenarios) != 8 || cfg.readShare != 0.9 || cfg.rwWork != 2*time.Millisecond || cfg.permits != 4 || len(cfg.mixes) != 1 || cfg.mixes[0] != (mix{4, 4}) ||
			strings.Join(cfg.locks, ",") != "rlock,redsync,redsync-1ms,redislock-100ms,redislock-1ms,rueidislock,poll,setnx" || cfg.addr != "" || cfg.json ||
			cfg.latency != 0 {
			t.Errorf("defaults = %+v, want %+v", cfg, want)
		}
	})
	t.Run("-lock both and one scenario", func(t *testing.T) {
		cfg, _, err := parseFlags([]string{"-scenario", "contended", "-lock", "both", "-workers", "3"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cfg.scenarios, ",") != "contended" || strings.Join(cfg.locks, ",") != "rlock,poll" || cfg.workers != 3 {
			t.Errorf("got %+v", cfg)
		}
	})
	t.Run("-lock takes a list", func(t *testing.T) {
		cfg, _, err := parseFlags([]string{"-lock", "rueidislock,setnx"}, io.Discard)
		if err != nil || strings.Join(cfg.locks, ",") != "rueidislock,setnx" {
			t.Errorf("locks = %v, %v", cfg.locks, err)
		}
	})
	t.Run("-mix all is every pair of 1, 2 and 4", func(t *testing.T) {
		cfg, _, err := parseFlags([]string{"-scenario", "mixed", "-mix", "all"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.mixes) != 9 || cfg.mixes[0] != (mix{1, 1}) || cfg.mixes[8] != (mix{4, 4}) {
			t.Errorf("mixes = %v", cfg.mixes)
		}
		cfg, _, err = parseFlags([]string{"-mix", "2:1"}, io.Discard)
		if err != nil || len(cfg.mixes) != 1 || cfg.mixes[0] != (mix{2, 1}) {
			t.Errorf("-mix 2:1 = %v, %v", cfg.mixes, err)
		}
	})
	t.Run("-latency takes a duration, -scenario semaphore one scenario", func(t *testing.T) {
		cfg, _, err := parseFlags([]string{"-latency", "500us", "-scenario", "semaphore"}, io.Discard)
		if err != nil || cfg.latency != 500*time.Microsecond || strings.Join(cfg.scenarios, ",") != "semaphore" {
			t.Errorf("latency %v, scenarios %v, err %v", cfg.latency, cfg.scenarios, err)
		}
	})
	t.Run("-scenario parallel is not in all; -rounds sets many-held's and parallel's", func(t *testing.T) {
		cfg, _, err := parseFlags(nil, io.Discard)
		if err != nil || slices.Contains(cfg.scenarios, parallelScenario) || cfg.goroutines != 64 || cfg.parRounds != 5 || cfg.settle != time.Minute {
			t.Errorf("defaults: scenarios %v, goroutines %d, parallel rounds %d, settle %v, err %v", cfg.scenarios, cfg.goroutines, cfg.parRounds, cfg.settle, err)
		}
		cfg, _, err = parseFlags([]string{"-scenario", "parallel", "-rounds", "7", "-goroutines", "8", "-settle", "0s"}, io.Discard)
		if err != nil || strings.Join(cfg.scenarios, ",") != parallelScenario || cfg.rounds != 7 || cfg.parRounds != 7 || cfg.goroutines != 8 || cfg.settle != 0 {
			t.Errorf("scenarios %v, rounds %d and %d, goroutines %d, settle %v, err %v", cfg.scenarios, cfg.rounds, cfg.parRounds, cfg.goroutines, cfg.settle, err)
		}
	})
	t.Run("-cluster N with a parallel scenario", func(t *testing.T) {
		for _, sc := range parallelScenarios {
			cfg, _, err := parseFlags([]string{"-scenario", sc, "-cluster", "3", "-latency", "500us"}, io.Discard)
			if err != nil || cfg.cluster != 3 || strings.Join(cfg.scenarios, ",") != sc || cfg.latency != 500*time.Microsecond {
				t.Errorf("%s: cluster %d, scenarios %v, latency %v, err %v", sc, cfg.cluster, cfg.scenarios, cfg.latency, err)
			}
		}
		if cfg, _, err := parseFlags([]string{"-scenario", "parallel"}, io.Discard); err != nil || cfg.cluster != 0 {
			t.Errorf("default: cluster %d, err %v; want 0 (one server)", cfg.cluster, err)
		}
	})
	t.Run("-scenario rwmutex with its read share and work", func(t *testing.T) {
		cfg, _, err := parseFlags([]string{"-scenario", "rwmutex", "-read-share", "0.5", "-work", "5ms", "-rounds", "4"}, io.Discard)
		if err != nil || strings.Join(cfg.scenarios, ",") != "rwmutex" || cfg.readShare != 0.5 || cfg.rwWork != 5*time.Millisecond || cfg.rounds != 4 {
			t.Errorf("scenarios %v, read share %v, work %v, rounds %d, err %v", cfg.scenarios, cfg.readShare, cfg.rwWork, cfg.rounds, err)
		}
	})
	t.Run("-h asks for help", func(t *testing.T) {
		var out bytes.Buffer
		if _, _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("err = %v, want flag.ErrHelp", err)
		}
		if !strings.Contains(out.String(), "-scenario") {
			t.Errorf("usage does not list the flags:\n%s", out.String())
		}
	})
	for _, args := range [][]string{
		{"-scenario", "nope"},
		{"-lock", "spin"},
		{"-lock", "rlock,spin"},
		{"-lock", ""},
		{"-n", "0"},
		{"-permits", "0"},
		{"-workers", "1"},
		{"-watchdog", "1ms"},
		{"-poll-min", "5ms", "-poll-max", "1ms"},
		{"-mix", "0:4"},
		{"-mix", "4"},
		{"-mix", "4:4:4"},
		{"-mix", "a:b"},
		{"-latency", "-1ms"},
		{"-goroutines", "0"},
		{"-rounds", "-1"},
		{"-settle", "-1s"},
		{"-read-share", "1.1"},
		{"-read-share", "-0.1"},
		{"-work", "-1ms"},
		{"-scenario", "parallel", "-cluster", "-1"},
		{"-cluster", "3"}, // -scenario all: no cluster ground
		{"-scenario", "contended", "-cluster", "3"},
		{"-scenario", "parallel", "-cluster", "3", "-addr", "127.0.0.1:6379"},
		{"extra"},
	} {
		t.Run("rejects "+strings.Join(args, " "), func(t *testing.T) {
			if _, _, err := parseFlags(args, io.Discard); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestPercentileAndFormatting(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v", got)
	}
	if got := median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %v, want 2.5", got)
	}
	for d, want := range map[time.Duration]string{
		95 * time.Microsecond:   "95µs",
		1500 * time.Microsecond: "1.50ms",
		25 * time.Millisecond:   "25.0ms",
		2 * time.Second:         "2.00s",
		-6 * time.Microsecond:   "-6µs",
	} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
}
