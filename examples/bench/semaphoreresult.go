package main

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The semaphore scenario's targets, beside max holders ≤ permits (a hard
// failure: the run exits 1 when it is broken).
const (
	semCmdsPerAcq     = 4.0 // client commands per acquisition
	semMaxOverMinGoal = 3.0 // acquisitions per worker, max/min
)

// semHandoffs pairs each Lock return with the latest Unlock call before it,
// by another worker, that happened while this worker waited (between its
// Lock call and Lock return): with N permits, several Unlocks may fall in
// one wait and any of them may be the one that freed this permit; the
// latest is the closest, so the figure is the hand-off's lower bound. A
// turn with no other worker's Unlock call in its wait found a permit free
// and is not a hand-off. Turns are one run's, every worker's.
func semHandoffs(turns []turn) []time.Duration {
	type unlockCall struct {
		at     time.Duration
		worker int
	}
	calls := make([]unlockCall, len(turns))
	for i, t := range turns {
		calls[i] = unlockCall{t.unlockCall, t.worker}
	}
	slices.SortFunc(calls, func(a, b unlockCall) int { return int(a.at - b.at) })
	var out []time.Duration
	for _, t := range turns {
		// The last Unlock call at or before the Lock return…
		i := sort.Search(len(calls), func(i int) bool { return calls[i].at > t.acquired }) - 1
		// …that another worker made, within this worker's wait.
		for ; i >= 0 && calls[i].at >= t.called; i-- {
			if calls[i].worker != t.worker {
				out = append(out, t.acquired-calls[i].at)
				break
			}
		}
	}
	return sorted(out)
}

// semaphoreResult is the semaphore scenario's line: the contended figures
// of one semaphore, its utilization over every permit, the most holders
// the workers saw at once and the hand-offs as semHandoffs pairs them.
func semaphoreResult(cfg config, m *contendedRun, most int64, free int) *result {
	st := countTurns(m.turns, cfg.duration)
	var all []turn
	for _, ts := range m.turns {
		for _, t := range ts {
			if t.acquired < cfg.duration {
				all = append(all, t)
			}
		}
	}
	handoffs := semHandoffs(all)
	perAcq := func(v float64) float64 { return v / float64(max(st.acqs, 1)) }
	cmds := perAcq(float64(m.clientTotal))

	r := newResult("semaphore", "rlock")
	r.param("workers", cfg.workers)
	r.param("permits", cfg.permits)
	r.param("hold", cfg.hold)
	r.param("think", cfg.think)
	r.param("duration", cfg.duration)
	r.num("acquisitions_per_sec", "acq/s=%.0f", float64(st.acqs)/cfg.duration.Seconds())
	r.num("utilization", "util=%.3f", float64(st.held)/(float64(cfg.duration)*float64(cfg.permits)))
	r.num("max_holders", "max holders=%.0f", float64(most))
	r.dur("handoff_p50", "hand-off p50", percentile(handoffs, 0.5))
	r.dur("handoff_p99", "p99", percentile(handoffs, 0.99))
	r.num("handoffs", "(%.0f)", float64(len(handoffs)))
	r.dur("wait_p50", "wait p50", percentile(st.waits, 0.5))
	r.dur("wait_p99", "p99", percentile(st.waits, 0.99))
	r.num("client_cmds_per_acq", "client cmds/acq=%.2f", cmds)
	r.num("server_cmds_per_acq", "(commandstats %.1f/acq)", perAcq(float64(m.srv.total)))
	r.num("redis_cpu_us_per_acq", "redis-server CPU/acq=%.1fµs", perAcq(float64(m.redisCPU)/1e3))
	r.num("acq_per_worker_min", "per worker min=%.0f", float64(slices.Min(st.perWorker)))
	r.num("acq_per_worker_max", "max=%.0f", float64(slices.Max(st.perWorker)))
	r.num("acq_per_worker_max_over_min", "(%.2f)", st.maxOverMin)
	r.dur("ping_p50", "PING p50 during", m.pingDuring)
	r.num("available_after", "free after=%.0f", float64(free))
	r.Metrics["acquisitions"] = float64(st.acqs)
	r.Metrics["hold_mean_us"] = round(float64(st.meanHoldTime)/1e3, 1)
	r.Metrics["commandstats_us_per_acq"] = round(perAcq(float64(m.srv.topUsec)), 2)
	r.Metrics["ping_before_p50_us"] = round(float64(m.pingBefore)/1e3, 1)
	r.Breakdown["client_cmds_per_acq"] = perOp(m.clientCmds, st.acqs)
	r.Breakdown["commandstats_per_acq"] = perOp(m.srv.calls, st.acqs)
	r.Breakdown["acq_per_worker"] = map[string]float64{}
	for i, n := range st.perWorker {
		r.Breakdown["acq_per_worker"][fmt.Sprint(i)] = float64(n)
	}
	r.hardAtMost("max holders<=permits", float64(most), float64(cfg.permits))
	r.atMost(fmt.Sprintf("client cmds/acq<=%.0f", semCmdsPerAcq), cmds, semCmdsPerAcq)
	r.atMost(fmt.Sprintf("max/min per worker<=%.0f", semMaxOverMinGoal), st.maxOverMin, semMaxOverMinGoal)
	r.hardAtMost("permits back after", float64(cfg.permits-free), 0)
	return r
}
