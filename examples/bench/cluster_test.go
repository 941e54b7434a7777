package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// tinyParallel is tiny's configuration for a parallel scenario: a few
// goroutines, short runs, the wait for the keys to expire cut short.
func tinyParallel(addr, scenario string, rounds int) config {
	cfg := tiny(addr)
	cfg.scenarios = []string{scenario}
	cfg.goroutines, cfg.duration, cfg.parRounds, cfg.settle = 4, 200*time.Millisecond, rounds, 300*time.Millisecond
	return cfg
}

// With -cluster the tool starts a cluster, every lock runs on a cluster
// client of its own, and the server's figures are sums over the masters:
// a floor's pair is two commands on the server, one of them on whichever
// master owns the name, whichever that is.
func TestParallelOnAClusterSumsEveryMaster(t *testing.T) {
	t.Parallel()
	cfg := tinyParallel("", parallelScenario, 2)
	cfg.cluster = 3
	cfg.locks = []string{"rlock", "rueidislock"}
	rep := runJSON(t, cfg)

	if m := rep.Machine; m.Cluster != 3 || !m.OwnServer || !strings.HasPrefix(m.Ground, "a Redis Cluster of 3 masters (no replicas) on loopback; PING p50 ") {
		t.Errorf("machine %+v, want the tool's own cluster of 3 masters", m)
	}
	kinds := []string{"rlock", unbatchedKind, "rueidislock", "setnx", autopipelineKind}
	for _, kind := range kinds {
		r := find(t, rep, parallelScenario, kind)
		m := r.Metrics
		if m["acquisitions"] < 1 || m["redis_cpu_us_per_acq"] <= 0 {
			t.Errorf("%s: %v", kind, m)
		}
		// Beside its pairs the server counts the connection set-ups (HELLO,
		// CLIENT SETINFO, CLUSTER SLOTS): a few commands for each
		// connection a goroutine (or the pipeliner) opens to a master in a
		// round, however few pairs a loaded machine made in it.
		if v := m["server_cmds_per_acq"]; kind == "setnx" || kind == autopipelineKind {
			extra := (v - 2) * m["acquisitions"]
			if setups := float64(cfg.parRounds * cfg.cluster * (cfg.goroutines + 1) * 4); v < 2 || extra > setups+0.5 {
				t.Errorf("%s: commandstats/acq = %v over the masters (%.0f commands beside the pairs of %v acquisitions, at most %v set-ups), want 2: %v",
					kind, v, extra, m["acquisitions"], setups, r.Breakdown["commandstats_per_acq"])
			}
		}
	}
	c := find(t, rep, "parallel-compare", "rlock")
	if len(c.Targets) != len(parallelTargets) {
		t.Errorf("targets %+v, want %d", c.Targets, len(parallelTargets))
	}
}

// parallel-semaphore runs rlock's Mutex and its Semaphore, 2 permits a
// name, taking turns, and judges the Semaphore's acquisitions/s against
// the Mutex's round by round.
func TestParallelSemaphoreRunsBesideTheMutex(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tinyParallel(srv.Addr(), parallelSemaphoreScenario, 2)
	cfg.locks = lockKinds // ignored: no other lock has a semaphore
	rep := runJSON(t, cfg)
	checkParallelSemaphore(t, rep, cfg.parRounds)
}

// -latency composes with -cluster: a proxy per master, which the cluster
// clients (go-redis' and rueidis') reach through their dialers, so every
// Lock+Unlock takes at least the added round trip.
func TestClusterComposesWithLatency(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Millisecond
	rtt := float64((2 * d).Microseconds())
	cfg := tinyParallel("", parallelSemaphoreScenario, 1)
	cfg.cluster, cfg.latency = 3, d
	rep := runJSON(t, cfg)

	m := rep.Machine
	if want := "a Redis Cluster of 3 masters (no replicas) on loopback, each through a faultproxy, 2ms each way; PING p50 "; !strings.HasPrefix(m.Ground, want) || m.PingP50Us < rtt {
		t.Errorf("ground %q, PING p50 %vµs: want %q…, at least %vµs", m.Ground, m.PingP50Us, want, rtt)
	}
	checkParallelSemaphore(t, rep, cfg.parRounds)
	for _, kind := range []string{"rlock", semaphoreKind} {
		if p50 := find(t, rep, parallelSemaphoreScenario, kind).Metrics["p50_us"]; p50 < rtt {
			t.Errorf("%s: lock+unlock p50 %vµs, want at least %vµs", kind, p50, rtt)
		}
	}
}

func checkParallelSemaphore(t *testing.T, rep report, rounds int) {
	t.Helper()
	if got := len(rep.Results); got != 3 {
		t.Fatalf("%d results, want the Mutex's, the Semaphore's and the comparison: %+v", got, rep.Results)
	}
	for _, kind := range []string{"rlock", semaphoreKind} {
		r := find(t, rep, parallelSemaphoreScenario, kind)
		if r.Metrics["acquisitions"] < 1 || len(r.Breakdown["acquisitions_per_sec_per_round"]) != rounds {
			t.Errorf("%s: %v, rounds %v", kind, r.Metrics, r.Breakdown["acquisitions_per_sec_per_round"])
		}
	}
	c := find(t, rep, parallelSemaphoreScenario+"-compare", semaphoreKind)
	key := "acq_per_sec_" + semaphoreKind + "_over_rlock"
	if len(c.Targets) != 1 || c.Metrics[key+"_median"] <= 0 || len(c.Breakdown[key+"_per_round"]) != rounds {
		t.Errorf("comparison: targets %+v, metrics %v, breakdown %v", c.Targets, c.Metrics, c.Breakdown)
	}
}
