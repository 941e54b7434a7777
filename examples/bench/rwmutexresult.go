package main

import "fmt"

// rwResults is the rwmutex scenario's two lines: the Mutex's, then the
// RWMutex's with the ratios of its operations/s to the Mutex's.
func rwResults(cfg config, rw, mu *rwTally) []*result {
	m := rwResult("rwmutex-on-mutex", cfg, mu)
	r := rwResult("rwmutex", cfg, rw)
	ratios := make([]float64, len(rw.opsPerSecRounds))
	for i := range ratios {
		ratios[i] = rw.opsPerSecRounds[i] / max(mu.opsPerSecRounds[i], 1e-9)
	}
	r.num("ops_per_sec_over_mutex_median", "ops/s÷mutex=%.2f×", median(ratios))
	r.Breakdown["ops_per_sec_over_mutex_per_round"] = indexed(ratios)
	return []*result{m, r}
}

// rwResult is one kind's line.
func rwResult(scenario string, cfg config, t *rwTally) *result {
	r := newResult(scenario, "rlock")
	r.param("workers", cfg.workers)
	r.param("reads", fmt.Sprintf("%.0f%%", 100*cfg.readShare))
	r.param("work", cfg.rwWork)
	r.param("rounds", cfg.rounds)
	r.param("duration", cfg.duration)
	ops := len(t.reads) + len(t.writes)
	r.num("ops", "ops=%.0f", float64(ops))
	r.num("ops_per_sec", "ops/s=%.0f", float64(ops)/max(t.elapsed.Seconds(), 1e-9))
	r.num("reads", "reads=%.0f", float64(len(t.reads)))
	r.num("writes", "writes=%.0f", float64(len(t.writes)))
	reads, writes := sorted(t.reads), sorted(t.writes)
	r.dur("read_p50", "read p50", percentile(reads, 0.5))
	r.dur("read_p99", "p99", percentile(reads, 0.99))
	r.dur("write_p50", "write p50", percentile(writes, 0.5))
	r.dur("write_p99", "p99", percentile(writes, 0.99))
	r.num("most_readers", "most readers=%.0f", float64(t.check.mostReaders.Load()))
	v := float64(t.check.violations.Load())
	r.num("violations", "writer beside anyone=%.0f", v)
	r.Breakdown["ops_per_sec_per_round"] = indexed(t.opsPerSecRounds)
	r.hardAtMost("no writer beside anyone", v, 0)
	return r
}

// indexed maps each value to its index, as "1", "2", ... (for Breakdown).
func indexed(vs []float64) map[string]float64 {
	out := make(map[string]float64, len(vs))
	for i, v := range vs {
		out[fmt.Sprint(i+1)] = round(v, 4)
	}
	return out
}
