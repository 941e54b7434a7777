package main

import (
	"fmt"
	"strings"
	"time"
)

// Per-acquisition figures of one round of the parallel scenario.

func (pr *parRound) acqs() int { return len(pr.pairs) }

func (pr *parRound) perSec() float64 { return float64(pr.acqs()) / pr.elapsed.Seconds() }

// expiryCPU is the server's CPU time from the run's end until its keys
// had expired, less what the idle server spends in as long.
func (pr *parRound) expiryCPU() time.Duration { return max(pr.tailCPU-pr.tailIdle, 0) }

// redisCPUPerAcq is the server's CPU time per acquisition in µs, from the
// run's start until its keys had expired (expiryCPU).
func (pr *parRound) redisCPUPerAcq() float64 {
	return float64(pr.runCPU+pr.expiryCPU()) / 1e3 / float64(max(pr.acqs(), 1))
}

func (pr *parRound) p99() float64 { return float64(percentile(pr.pairs, 0.99)) }

// parallelResult is one lock's line of a parallel scenario, over every
// round: acquisitions/s is the median of the rounds'; the latencies are
// percentiles of every pair of every round; the costs are totals over the
// rounds divided by all their acquisitions.
func parallelResult(cfg config, scenario, kind string, rounds []*parRound) *result {
	var all []time.Duration
	var runCPU, expiryCPU, clientCPU, longestTail time.Duration
	var acqs, client, srv, reads, alive, stalled int64
	var mallocs uint64
	calls, usec := map[string]int64{}, map[string]int64{}
	rates := make([]float64, len(rounds))
	r := newResult(scenario, kind)
	for i, pr := range rounds {
		all = append(all, pr.pairs...)
		runCPU, expiryCPU, clientCPU = runCPU+pr.runCPU, expiryCPU+pr.expiryCPU(), clientCPU+pr.clientCPU
		longestTail = max(longestTail, pr.tail)
		acqs, client, srv = acqs+int64(pr.acqs()), client+pr.client, srv+pr.srv.total
		alive = max(alive, pr.alive)
		stalled += int64(pr.stalled)
		mallocs += pr.mallocs
		reads += pr.reads
		for k, n := range pr.srv.calls {
			calls[k] += n
			usec[k] += pr.srv.usec[k]
		}
		rates[i] = pr.perSec()
		r.addRound(i, pr)
	}
	sorted(all)
	perAcq := func(v float64) float64 { return v / float64(max(acqs, 1)) }
	r.param("goroutines", cfg.goroutines)
	r.param("duration", cfg.duration)
	r.param("rounds", len(rounds))
	r.num("acquisitions_per_sec", "acq/s=%.0f", median(rates))
	r.note("(rounds %s)", fmtRates(rates))
	r.dur("p50", "lock+unlock p50", percentile(all, 0.5))
	r.dur("p99", "p99", percentile(all, 0.99))
	r.num("redis_cpu_us_per_acq", "| redis-server CPU/acq=%.1fµs", perAcq(float64(runCPU+expiryCPU)/1e3))
	r.num("redis_cpu_run_us_per_acq", "(run %.1fµs", perAcq(float64(runCPU)/1e3))
	r.num("redis_cpu_expiry_us_per_acq", "+ its keys' expiry %.2fµs)", perAcq(float64(expiryCPU)/1e3))
	r.num("server_cmds_per_acq", "commandstats/acq=%.2f", perAcq(float64(srv)))
	r.num("client_cmds_per_acq", "client cmds/acq=%.2f", perAcq(float64(client)))
	r.num("server_reads_per_acq", "server reads/acq=%.3f", perAcq(float64(reads)))
	r.num("client_cpu_us_per_acq", "| this process CPU/acq=%.1fµs", perAcq(float64(clientCPU)/1e3))
	r.num("allocs_per_acq", "allocs/acq=%.1f", perAcq(float64(mallocs)))
	r.dur("expiry_wait_max", "| keys expired within", longestTail)
	r.num("keys_alive", "(alive after=%.0f)", float64(alive))
	r.num("stalled_lock_calls", "| stalled Lock calls=%.0f", float64(stalled))
	r.Metrics["acquisitions"] = float64(acqs)
	r.Breakdown["commandstats_per_acq"] = perOp(calls, int(acqs))
	r.Breakdown["commandstats_usec_per_acq"] = perOp(usec, int(acqs))
	return r
}

// addRound records one round's figures in the breakdown.
func (r *result) addRound(i int, pr *parRound) {
	add := func(key string, v float64) {
		if r.Breakdown[key] == nil {
			r.Breakdown[key] = map[string]float64{}
		}
		r.Breakdown[key][fmt.Sprint(i+1)] = round(v, 2)
	}
	add("acquisitions_per_sec_per_round", pr.perSec())
	add("p99_us_per_round", pr.p99()/1e3)
	add("redis_cpu_us_per_acq_per_round", pr.redisCPUPerAcq())
}

// fmtRates prints rates per second in thousands: "12.1k 13.0k".
func fmtRates(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf("%.1fk", v/1e3)
	}
	return strings.Join(s, " ")
}
