package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// runSemaphoreUncontended times, on one goroutine and one go-redis client,
// a semaphore's Lock+Unlock, a mutex's Lock+Unlock and the floor (SET NX PX
// + DEL), as the uncontended scenario does: cfg.runs runs of cfg.n pairs of
// each, the three taking turns every cfg.block pairs, each turn starting
// with the next kind, so that all three see the same machine.
func runSemaphoreUncontended(ctx context.Context, e *env, cfg config) (*result, error) {
	const semName, mutexName, floorKey = "rlock-bench:semaphore-uncontended", "rlock-bench:semaphore-mutex", "rlock-bench:floor"
	if err := e.admin.Del(ctx, semName, "{"+semName+"}:timeout").Err(); err != nil {
		return nil, err
	}
	counter := newCmdCounter()
	rdb := e.newRedis("rlock-bench-semaphore-uncontended", counter)
	defer rdb.Close()
	c := lockmw.New(rdb)
	defer c.Close()
	sem, mu := c.Semaphore(semName, cfg.permits), c.Mutex(mutexName)

	semOp := func() error {
		p, err := sem.Lock(ctx)
		if err != nil {
			return err
		}
		return sem.Unlock(p)
	}
	mutexOp := func() error {
		h, err := mu.Lock(ctx)
		if err != nil {
			return err
		}
		return mu.Unlock(h)
	}
	floorOp := floorPair(ctx, rdb, floorKey)
	ops := []func() error{semOp, mutexOp, floorOp}
	// Warm up: load the scripts, open the connection, settle the GC.
	for range min(200, cfg.n) {
		for _, op := range ops {
			if err := op(); err != nil {
				return nil, err
			}
		}
	}
	t, err := timeInTurns(ctx, e, counter, cfg, ops)
	if err != nil {
		return nil, err
	}
	return semaphoreUncontendedResult(cfg, t), nil
}

// turnTimes is what timeInTurns measured, by kind: every duration (sorted),
// each run's p50, and the costs.
type turnTimes struct {
	all   [][]time.Duration
	runs  [][]time.Duration // [kind][run] p50
	costs []serverCost
}

// timeInTurns runs cfg.runs runs of cfg.n calls of each op, the ops taking
// turns every cfg.block calls, each turn starting with the next op.
func timeInTurns(ctx context.Context, e *env, counter *cmdCounter, cfg config, ops []func() error) (turnTimes, error) {
	k := len(ops)
	t := turnTimes{all: make([][]time.Duration, k), runs: make([][]time.Duration, k), costs: make([]serverCost, k)}
	for run := range cfg.runs {
		this := make([][]time.Duration, k)
		for done, turn := 0, run; done < cfg.n; turn++ {
			n := min(cfg.block, cfg.n-done)
			for i := range ops {
				j := (turn + i) % k
				ds, _, err := timeBlock(ctx, e, counter, n, ops[j], &t.costs[j])
				if err != nil {
					return t, err
				}
				this[j] = append(this[j], ds...)
			}
			done += n
		}
		for j := range ops {
			t.runs[j] = append(t.runs[j], percentile(sorted(this[j]), 0.5))
			t.all[j] = append(t.all[j], this[j]...)
		}
	}
	for j := range ops {
		sorted(t.all[j])
	}
	return t, nil
}

// semaphoreUncontendedResult is the line of the uncontended trio: p50 and
// p99 of each, the median over runs of p50(semaphore)/p50(mutex), and what
// each costs in commands and in the server's CPU.
func semaphoreUncontendedResult(cfg config, t turnTimes) *result {
	const sem, mutex, floor = 0, 1, 2
	ops := float64(cfg.n * cfg.runs)
	ratios := make([]float64, cfg.runs)
	for i := range ratios {
		ratios[i] = float64(t.runs[sem][i]) / float64(t.runs[mutex][i])
	}
	r := newResult("semaphore-uncontended", "rlock")
	r.param("permits", cfg.permits)
	r.param("n", cfg.n)
	r.param("runs", cfg.runs)
	for _, k := range []struct {
		i          int
		key, label string
	}{{sem, "semaphore", "semaphore Lock+Unlock"}, {mutex, "mutex", "| mutex Lock+Unlock"}, {floor, "floor", "| SET NX PX+DEL"}} {
		r.dur(k.key+"_p50", k.label+" p50", percentile(t.all[k.i], 0.5))
		r.dur(k.key+"_p99", "p99", percentile(t.all[k.i], 0.99))
		r.num(k.key+"_client_cmds_per_op", "cmds %.2f", float64(t.costs[k.i].client)/ops)
		r.num(k.key+"_redis_cpu_us_per_op", "redis-server CPU %.1fµs", float64(t.costs[k.i].redisCPU)/1e3/ops)
	}
	r.num("semaphore_over_mutex_p50_median", "| p50 semaphore/mutex median %.3f", median(ratios))
	r.note("(runs %s)", fmtRatios(ratios))
	r.Breakdown["semaphore_over_mutex_per_run"] = map[string]float64{}
	for i, v := range ratios {
		r.Breakdown["semaphore_over_mutex_per_run"][fmt.Sprint(i+1)] = round(v, 4)
	}
	return r
}
