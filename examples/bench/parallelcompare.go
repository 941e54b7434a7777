package main

import (
	"fmt"
	"runtime"
	"strings"
)

// parTarget is one of the targets of a parallel scenario: the median over
// the rounds of its subject's figure (rlock's, the Semaphore's) / the other
// lock's, at least or at most limit.
type parTarget struct {
	against string
	figure  string // "acq/s", "redis CPU/acq" or "p99"
	atLeast bool
	limit   float64
}

// parallelTargets are issue 32's, and on a cluster (-cluster) issue 44's:
// acquisitions/s ≥ 1.2 × the plain floor's, ≥ rueidislock's, ≥ 0.5 × the
// auto-pipelined floor's; redis-server CPU per acquisition ≤ the plain
// floor's (issue 32's), ≤ rueidislock's (issue 44's), ≤ 3 × the
// auto-pipelined floor's; p99 ≤ the plain floor's.
var parallelTargets = []parTarget{
	{"setnx", "acq/s", true, 1.2},
	{"rueidislock", "acq/s", true, 1},
	{autopipelineKind, "acq/s", true, 0.5},
	{"setnx", "redis CPU/acq", false, 1},
	{"rueidislock", "redis CPU/acq", false, 1},
	{autopipelineKind, "redis CPU/acq", false, 3},
	{"setnx", "p99", false, 1},
}

// semaphoreTargets are issue 44's for parallel-semaphore: the Semaphore's
// acquisitions/s ≥ 0.8 × the Mutex's.
var semaphoreTargets = []parTarget{{"rlock", "acq/s", true, 0.8}}

// figureKeys name the figures in -json: the median of the ratios is
// <key>_rlock_over_<lock>_median, the ratios <key>_rlock_over_<lock>_per_round.
var figureKeys = map[string]string{"acq/s": "acq_per_sec", "redis CPU/acq": "redis_cpu_per_acq", "p99": "p99"}

// of is the round's figure the target compares.
func (t parTarget) of(pr *parRound) float64 {
	switch t.figure {
	case "acq/s":
		return pr.perSec()
	case "redis CPU/acq":
		return pr.redisCPUPerAcq()
	}
	return pr.p99()
}

// compareParallel returns the block of the targets of rs's plan, each the
// median of the per-round ratios of its subject's figure to another lock's
// (their runs of one round are minutes apart at most), or nil without the
// subject. A target against a lock that did not run is left out.
func compareParallel(rs parallelRuns) *result {
	subject := rs.plan.subject
	rl := rs.byKind[subject]
	if rl == nil {
		return nil
	}
	r := newResult(rs.plan.scenario+"-compare", subject)
	r.param("gomaxprocs", runtime.GOMAXPROCS(0))
	r.param("rounds", len(rl))
	r.note("load average at each round's start: %s", strings.Join(rs.loads, " | "))
	r.num("idle_redis_cpu_ms_per_sec", "| idle redis-server CPU %.2fms/s (left out of the expiry waits)", rs.idle*1e3)
	for _, t := range rs.plan.targets {
		other := rs.byKind[t.against]
		if other == nil {
			continue
		}
		ratios := make([]float64, len(rl))
		for i := range rl {
			ratios[i] = t.of(rl[i]) / t.of(other[i])
		}
		m := median(ratios)
		name := fmt.Sprintf("%s %s/%s", t.figure, subject, t.against)
		key := figureKeys[t.figure] + "_" + subject + "_over_" + t.against
		r.Metrics[key+"_median"] = round(m, 4)
		r.Breakdown[key+"_per_round"] = map[string]float64{}
		for i, v := range ratios {
			r.Breakdown[key+"_per_round"][fmt.Sprint(i+1)] = round(v, 4)
		}
		op, verdict := "<=", m <= t.limit
		if t.atLeast {
			op, verdict = ">=", m >= t.limit
			r.atLeast(fmt.Sprintf("%s>=%g", name, t.limit), m, t.limit)
		} else {
			r.atMost(fmt.Sprintf("%s<=%g", name, t.limit), m, t.limit)
		}
		r.extra = append(r.extra, fmt.Sprintf("  %s\tmedian %.2f\t(rounds %s)\ttarget %s%g %s",
			name, m, fmtRatios(ratios), op, t.limit, metOrMissed(verdict)))
	}
	return r
}

func metOrMissed(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}
