package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"

	"github.com/redis/go-redis/v9"
)

// uncontendedTarget is the most p50(lock+unlock)/p50(SET NX PX + DEL) may be.
const uncontendedTarget = 1.3

// runUncontended times lock+unlock on one name against the floor, a bare
// SET NX PX + DEL pair on the same go-redis client, in cfg.runs runs of
// cfg.n pairs each; within a run the two, and a third for reference
// (Redisson's own acquire and unlock scripts), take turns every cfg.block
// pairs, each turn starting with the next kind, so that all three see the
// same machine. Only rlock's run has the Redisson reference and the target.
func runUncontended(ctx context.Context, e *env, cfg config, kind string) (*result, error) {
	counter := newCmdCounter()
	rdb := e.newRedis("rlock-bench-uncontended", counter)
	defer rdb.Close()
	l, err := newLocker(kind, rdb, counter, "rlock-bench:uncontended", cfg)
	if err != nil {
		return nil, err
	}
	defer l.close()
	const floorKey = "rlock-bench:floor"

	lockOp := func() error {
		h, err := l.lock(ctx)
		if err != nil {
			return err
		}
		return l.unlock(h)
	}
	floorOp := floorPair(ctx, rdb, floorKey)
	// Warm up: load the scripts, open the connection, settle the GC.
	for range min(200, cfg.n) {
		if err := lockOp(); err != nil {
			return nil, err
		}
		if err := floorOp(); err != nil {
			return nil, err
		}
	}

	// Redisson's own acquire and unlock scripts on another name: what the
	// cheapest Redisson-compatible lock costs here, for reference.
	var refSeq int
	refOp := func() error {
		const name, field = "rlock-bench:redisson", "b3c5e0a1-0000-4000-8000-000000bench:1"
		ok, _, err := redisson.TryAcquire(ctx, rdb, name, field, 30*time.Second)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s was already locked", name)
		}
		refSeq++
		_, err = redisson.Unlock(ctx, rdb, name, field, strconv.Itoa(refSeq))
		return err
	}
	withRef := kind == "rlock"
	if withRef {
		if err := refOp(); err != nil { // loads the scripts
			return nil, err
		}
	}

	type kindRun struct {
		op   func() error
		all  []time.Duration
		time time.Duration
		srv  serverCost
		run  []time.Duration
	}
	lockK, floorK, refK := &kindRun{op: lockOp}, &kindRun{op: floorOp}, &kindRun{op: refOp}
	kinds := []*kindRun{lockK, floorK}
	if withRef {
		kinds = append(kinds, refK)
	}
	ratios := make([]float64, 0, cfg.runs)
	refRatios := make([]float64, 0, cfg.runs)
	for run := range cfg.runs {
		for _, k := range kinds {
			k.run = k.run[:0]
		}
		// The kinds take turns every cfg.block pairs, each turn starting
		// with the next kind.
		for done, turn := 0, run; done < cfg.n; turn++ {
			n := min(cfg.block, cfg.n-done)
			for i := range kinds {
				k := kinds[(turn+i)%len(kinds)]
				ds, d, err := timeBlock(ctx, e, counter, n, k.op, &k.srv)
				if err != nil {
					return nil, err
				}
				k.run, k.time = append(k.run, ds...), k.time+d
			}
			done += n
		}
		floorP50 := float64(percentile(sorted(floorK.run), 0.5))
		ratios = append(ratios, float64(percentile(sorted(lockK.run), 0.5))/floorP50)
		if withRef {
			refRatios = append(refRatios, float64(percentile(sorted(refK.run), 0.5))/floorP50)
		}
		for _, k := range kinds {
			k.all = append(k.all, k.run...)
		}
	}
	lockAll, floorAll, refAll := lockK.all, floorK.all, refK.all
	lockTime, floorTime := lockK.time, floorK.time
	lockSrv, floorSrv := lockK.srv, floorK.srv
	sorted(lockAll)
	sorted(floorAll)
	sorted(refAll)
	ratio := median(ratios)

	r := newResult("uncontended", kind)
	r.param("n", cfg.n)
	r.param("runs", cfg.runs)
	total := float64(cfg.n * cfg.runs)
	ops := total
	r.num("ops_per_sec", "lock+unlock %.0f/s", total/lockTime.Seconds())
	r.dur("p50", "p50", percentile(lockAll, 0.5))
	r.dur("p99", "p99", percentile(lockAll, 0.99))
	r.num("floor_ops_per_sec", "| SET NX PX+DEL %.0f/s", total/floorTime.Seconds())
	r.dur("floor_p50", "p50", percentile(floorAll, 0.5))
	r.dur("floor_p99", "p99", percentile(floorAll, 0.99))
	r.num("redis_cpu_us_per_op", "| redis-server CPU %.1fµs", float64(lockSrv.redisCPU)/1e3/ops)
	r.num("floor_redis_cpu_us_per_op", "vs %.1fµs,", float64(floorSrv.redisCPU)/1e3/ops)
	r.Metrics["commandstats_us_per_op"] = round(float64(lockSrv.usec)/ops, 2)
	r.Metrics["floor_commandstats_us_per_op"] = round(float64(floorSrv.usec)/ops, 2)
	r.num("client_cpu_us_per_op", "in this process %.1fµs CPU", float64(lockSrv.cpu)/1e3/ops)
	r.num("floor_client_cpu_us_per_op", "vs %.1fµs,", float64(floorSrv.cpu)/1e3/ops)
	r.num("client_cmds_per_op", "client cmds %.2f", float64(lockSrv.client)/ops)
	r.num("floor_client_cmds_per_op", "vs %.2f", float64(floorSrv.client)/ops)
	if kind == "rlock" {
		// Each Unlock leaves a short-lived latch key (so that a re-sent
		// unlock cannot count twice); count the ones still alive.
		n, err := countKeys(ctx, e.admin, "redisson_unlock_latch:{rlock-bench:uncontended}:*")
		if err != nil {
			return nil, err
		}
		r.num("latch_keys_alive", "latch keys alive=%.0f", float64(n))
	}
	r.num("ratio_p50_median", "| p50 ratio median %.3f", ratio)
	r.note("(runs %s)", fmtRatios(ratios))
	if withRef {
		r.dur("redisson_p50", "| Redisson's scripts p50", percentile(refAll, 0.5))
		r.num("redisson_ratio_p50_median", "ratio median %.3f", median(refRatios))
		r.num("redisson_redis_cpu_us_per_op", "redis-server CPU %.1fµs", float64(refK.srv.redisCPU)/1e3/ops)
	}
	r.Breakdown["ratio_per_run"] = map[string]float64{}
	for i, v := range ratios {
		r.Breakdown["ratio_per_run"][fmt.Sprint(i+1)] = round(v, 4)
	}
	if kind == "rlock" {
		r.atMost(fmt.Sprintf("p50 ratio<=%.1f", uncontendedTarget), ratio, uncontendedTarget)
	}
	return r, nil
}

// serverCost accumulates what a kind of operation cost: commands the client
// sent and server time in them (INFO commandstats).
type serverCost struct {
	client, usec int64
	cpu          time.Duration // this process's CPU time
	redisCPU     time.Duration // the server's CPU time
}

// timeBlock is timeOps between two snapshots of the client's commands, of
// INFO commandstats, of the server's and of this process's CPU time, and
// adds the differences to cost.
func timeBlock(ctx context.Context, e *env, counter *cmdCounter, n int, op func() error, cost *serverCost) ([]time.Duration, time.Duration, error) {
	before, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, 0, err
	}
	rcpu, err := redisCPU(ctx, e.admin)
	if err != nil {
		return nil, 0, err
	}
	sent := counter.snapshot()
	cpu := processCPU()
	ds, total, err := timeOps(n, op)
	if err != nil {
		return nil, 0, err
	}
	cost.cpu += processCPU() - cpu
	top, client := delta(sent, counter.snapshot())
	after, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, 0, err
	}
	rcpu2, err := redisCPU(ctx, e.admin)
	if err != nil {
		return nil, 0, err
	}
	cost.client += client
	cost.usec += serverDelta(before, after, top).topUsec
	cost.redisCPU += rcpu2 - rcpu
	return ds, total, nil
}

// timeOps runs op n times and returns each call's duration and the total.
func timeOps(n int, op func() error) ([]time.Duration, time.Duration, error) {
	ds := make([]time.Duration, n)
	start := time.Now()
	for i := range ds {
		t := time.Now()
		if err := op(); err != nil {
			return nil, 0, err
		}
		ds[i] = time.Since(t)
	}
	return ds, time.Since(start), nil
}

func fmtRatios(vs []float64) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", v)
	}
	return s
}

// countKeys counts the keys matching pattern with SCAN.
func countKeys(ctx context.Context, rdb *redis.Client, pattern string) (int, error) {
	n := 0
	iter := rdb.Scan(ctx, 0, pattern, 10000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}

// floorPair returns the floor's operation: a bare SET NX PX of key and its
// DEL, on rdb.
func floorPair(ctx context.Context, rdb *redis.Client, key string) func() error {
	return func() error {
		ok, err := rdb.SetNX(ctx, key, "owner", 30*time.Second).Result()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("floor key %s was already set", key)
		}
		return rdb.Del(ctx, key).Err()
	}
}
