package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"
)

// settlePoll is how often the wait for a run's keys to expire asks DBSIZE.
const settlePoll = 100 * time.Millisecond

// parRound is one lock's run in one round of the parallel scenario.
type parRound struct {
	loadRun
	runCPU    time.Duration // redis-server CPU during the run
	tailCPU   time.Duration // redis-server CPU from the run's end until its keys were gone
	tail      time.Duration // how long that took (bounded by -settle)
	tailIdle  time.Duration // what the idle server spends in as long: not the run's
	alive     int64         // keys the run wrote still there when the wait ended
	srv       serverCounts  // INFO commandstats over the run and the tail
	reads     int64         // the server's reads from client connections during the run
	client    int64         // commands the lock's client sent during the run
	clientCPU time.Duration // this process's CPU time during the run
	mallocs   uint64        // this process's heap allocations during the run
}

// runParRound runs one lock of kind on cfg.goroutines names of its own,
// one goroutine each, all on one go-redis client (a ClusterClient with
// -cluster; the lock's own client, for rueidislock), for cfg.duration. The
// server's CPU time and commandstats (summed over the masters of a
// cluster) are read from before the run until the keys the run wrote
// have expired (rlock's unlock latches live ~13 s), or cfg.settle has
// passed: a lock's cost to the server includes the expiry of what it
// leaves behind. idle is the idle server's CPU time per second of wall
// time: the wait is long (Redis reaps the last expired keys slowly), and
// what the server would spend idling as long is no cost of the run.
func runParRound(ctx context.Context, e *env, cfg config, kind string, idle float64) (*parRound, error) {
	counter := newCmdCounter()
	rdb := e.newClient("rlock-bench-parallel", counter)
	defer rdb.Close()
	names := make([]string, cfg.goroutines)
	for i := range names {
		names[i] = fmt.Sprintf("rlock-bench:parallel:%s:%d", kind, i)
	}
	lockers, closeAll, err := newLockers(kind, rdb, counter, names, cfg)
	if err != nil {
		return nil, err
	}
	keys, err := sumNodes(ctx, e, dbSize)
	if err == nil && kind == semaphoreKind {
		// A semaphore's count, the key of its name, stays: the wait
		// would otherwise last -settle in the first round.
		var fresh int64
		fresh, err = missingKeys(ctx, rdb, names)
		keys += fresh
	}
	if err != nil {
		return nil, errors.Join(err, closeAll())
	}
	warmStalls, err := warmUpAll(ctx, lockers)
	if err != nil {
		return nil, errors.Join(err, closeAll())
	}
	pr, before, err := measureRun(ctx, e, cfg, lockers, counter)
	if err = errors.Join(err, closeAll()); err != nil {
		return nil, err
	}
	pr.stalled += warmStalls
	t0 := time.Now()
	if pr.alive, err = settle(ctx, e, keys, cfg.settle); err != nil {
		return nil, err
	}
	pr.tail = time.Since(t0)
	pr.tailIdle = time.Duration(idle * float64(pr.tail))
	after, err := readNodes(ctx, e)
	if err != nil {
		return nil, err
	}
	pr.tailCPU = after.cpu - before.cpu - pr.runCPU
	pr.srv = serverDelta(before.stats, after.stats, nil)
	return pr, nil
}

// measureRun runs the load between two readings of the server's CPU time
// and of this process's counters; it returns the first reading too.
func measureRun(ctx context.Context, e *env, cfg config, lockers []locker, counter *cmdCounter) (*parRound, serverReading, error) {
	before, err := readNodes(ctx, e)
	if err != nil {
		return nil, before, err
	}
	sent, cpu, mallocs := counter.snapshot(), processCPU(), heapMallocs()
	run, err := runLoad(ctx, lockers, cfg.duration)
	if err != nil {
		return nil, before, err
	}
	pr := &parRound{loadRun: run, clientCPU: processCPU() - cpu, mallocs: heapMallocs() - mallocs}
	_, pr.client = delta(sent, counter.snapshot())
	end, err := sumNodes(ctx, e, redisCPU)
	if err != nil {
		return nil, before, err
	}
	reads, err := sumNodes(ctx, e, serverReads)
	if err != nil {
		return nil, before, err
	}
	pr.runCPU, pr.reads = end-before.cpu, reads-before.reads
	return pr, before, nil
}

// settle waits until the server holds no more keys than it did before the
// run (DBSIZE counts a key until the server has expired it), for at most
// limit, and returns how many more it still holds.
func settle(ctx context.Context, e *env, keys int64, limit time.Duration) (int64, error) {
	deadline := time.Now().Add(limit)
	for {
		n, err := sumNodes(ctx, e, dbSize)
		if err != nil {
			return 0, err
		}
		if n <= keys || !time.Now().Before(deadline) {
			return max(n-keys, 0), nil
		}
		select {
		case <-time.After(settlePoll):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// missingKeys is how many of keys do not exist, one EXISTS each (the keys
// of a cluster are on many nodes).
func missingKeys(ctx context.Context, rdb redis.UniversalClient, keys []string) (int64, error) {
	var n int64
	for _, k := range keys {
		found, err := rdb.Exists(ctx, k).Result()
		if err != nil {
			return 0, err
		}
		n += 1 - found
	}
	return n, nil
}

// idleCPU is the server's CPU time per second of wall time over d in
// which the tool sends it nothing but two INFOs.
func idleCPU(ctx context.Context, e *env, d time.Duration) (float64, error) {
	before, err := sumNodes(ctx, e, redisCPU)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := sumNodes(ctx, e, redisCPU)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(time.Since(t0)), nil
}

// heapMallocs is how many heap objects this process has allocated so far.
func heapMallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}
