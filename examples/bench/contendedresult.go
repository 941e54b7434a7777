package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// turnStats is what the turns of a contended run add up to.
type turnStats struct {
	acqs         int
	perWorker    []int
	held         time.Duration   // time held, clipped to the run
	handoff      []time.Duration // Unlock called → the next owner's Lock returned, sorted
	handoffRet   []time.Duration // Unlock returned → the next owner's Lock returned, sorted
	waits        []time.Duration // Lock called → Lock returned, sorted
	maxOverMin   float64         // acquisitions per worker; +Inf when a worker got none
	meanHoldTime time.Duration   // Lock returned → Unlock called, on average
}

// countTurns counts every turn that began before the end of the run; holds
// are clipped to it. A hand-off is a turn whose owner differs from the
// previous turn's.
func countTurns(turns [][]turn, duration time.Duration) turnStats {
	var all []turn
	st := turnStats{perWorker: make([]int, len(turns))}
	var holds time.Duration
	for i, ts := range turns {
		for _, t := range ts {
			if t.acquired >= duration {
				continue
			}
			all = append(all, t)
			st.perWorker[i]++
			st.held += min(t.unlockCall, duration) - t.acquired
			holds += t.unlockCall - t.acquired
		}
	}
	slices.SortFunc(all, func(a, b turn) int { return int(a.acquired - b.acquired) })
	for i, t := range all {
		st.waits = append(st.waits, t.acquired-t.called)
		if i > 0 && all[i-1].worker != t.worker {
			st.handoff = append(st.handoff, t.acquired-all[i-1].unlockCall)
			st.handoffRet = append(st.handoffRet, t.acquired-all[i-1].released)
		}
	}
	sorted(st.handoff)
	sorted(st.handoffRet)
	sorted(st.waits)
	st.acqs = len(all)
	st.meanHoldTime = holds / time.Duration(max(st.acqs, 1))
	lo, hi := slices.Min(st.perWorker), slices.Max(st.perWorker)
	st.maxOverMin = math.Inf(1)
	if lo > 0 {
		st.maxOverMin = float64(hi) / float64(lo)
	}
	return st
}

// contendedResult is one lock's row of the contended scenario. It carries
// no targets: rlock's compare it with the other rows (compareContended).
func contendedResult(cfg config, kind string, m *contendedRun) *result {
	st := countTurns(m.turns, cfg.duration)
	perAcq := func(v float64) float64 { return v / float64(max(st.acqs, 1)) }

	r := newResult("contended", kind)
	r.param("workers", cfg.workers)
	r.param("hold", cfg.hold)
	r.param("think", cfg.think)
	r.param("duration", cfg.duration)
	r.num("acquisitions_per_sec", "acq/s=%.0f", float64(st.acqs)/cfg.duration.Seconds())
	r.num("utilization", "util=%.3f", float64(st.held)/float64(cfg.duration))
	r.dur("handoff_p50", "hand-off p50", percentile(st.handoff, 0.5))
	r.dur("handoff_p99", "p99", percentile(st.handoff, 0.99))
	r.dur("handoff_from_return_p50", "(from return p50", percentile(st.handoffRet, 0.5))
	r.dur("handoff_from_return_p99", "p99", percentile(st.handoffRet, 0.99))
	r.parts[len(r.parts)-1] += ")"
	r.dur("wait_p50", "wait p50", percentile(st.waits, 0.5))
	r.dur("wait_p99", "p99", percentile(st.waits, 0.99))
	r.num("client_cmds_per_acq", "client cmds/acq=%.2f", perAcq(float64(m.clientTotal)))
	r.num("server_cmds_per_acq", "(commandstats %.1f/acq)", perAcq(float64(m.srv.total)))
	r.num("redis_cpu_us_per_acq", "redis-server CPU/acq=%.1fµs", perAcq(float64(m.redisCPU)/1e3))
	r.Metrics["commandstats_us_per_acq"] = round(perAcq(float64(m.srv.topUsec)), 2)
	r.num("acq_per_worker_min", "per worker min=%.0f", float64(slices.Min(st.perWorker)))
	r.num("acq_per_worker_max", "max=%.0f", float64(slices.Max(st.perWorker)))
	r.num("acq_per_worker_max_over_min", "(%.2f)", st.maxOverMin)
	r.dur("ping_p50", "PING p50 during", m.pingDuring)
	r.dur("ping_before_p50", "(before", m.pingBefore)
	r.parts[len(r.parts)-1] += ")"
	if m.handoffSubs >= 0 {
		r.num("handoff_channel_subscribers", "connections per hand-off message=%.0f", float64(m.handoffSubs))
	}
	r.Metrics["acquisitions"] = float64(st.acqs)
	r.Metrics["hold_mean_us"] = round(float64(st.meanHoldTime)/1e3, 1)
	r.Metrics["handoffs"] = float64(len(st.handoff))
	r.Breakdown["client_cmds_per_acq"] = perOp(m.clientCmds, st.acqs)
	r.Breakdown["commandstats_per_acq"] = perOp(m.srv.calls, st.acqs)
	r.Breakdown["commandstats_usec_per_call"] = m.srv.usecPerCall()
	r.Breakdown["acq_per_worker"] = map[string]float64{}
	for i, n := range st.perWorker {
		r.Breakdown["acq_per_worker"][fmt.Sprint(i)] = float64(n)
	}
	return r
}
