package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// The rwmutex scenario's names: one for the RWMutex, one for the Mutex
// (their keys differ in layout, so the two never share a name).
const (
	rwBenchName    = "rlock-bench:rwmutex"
	rwBenchMutexed = "rlock-bench:rwmutex-on-mutex"
)

// rwWorker is one worker of the rwmutex scenario: a go-redis client and a
// lockmw.Client of its own, with both locks on it.
type rwWorker struct {
	rdb *redis.Client
	c   *lockmw.Client
	rw  *lockmw.RWMutex
	mu  *lockmw.Mutex
}

// lock takes the read or the write side of the RWMutex, or with onMutex
// the Mutex whatever the side, and returns the release.
func (w *rwWorker) lock(ctx context.Context, onMutex, read bool) (func() error, error) {
	var hold context.Context
	var err error
	switch {
	case onMutex:
		if hold, err = w.mu.Lock(ctx); err == nil {
			return func() error { return w.mu.Unlock(hold) }, nil
		}
	case read:
		if hold, err = w.rw.RLock(ctx); err == nil {
			return func() error { return w.rw.RUnlock(hold) }, nil
		}
	default:
		if hold, err = w.rw.Lock(ctx); err == nil {
			return func() error { return w.rw.Unlock(hold) }, nil
		}
	}
	return nil, err
}

// rwCheck is the tool's own view of who holds: a side's count goes up
// after its Lock returns and down before its Unlock is called, so it can
// only understate a hold, and an overlap it sees is one that happened.
// Each side adds itself before it reads the other (sequentially consistent
// atomics), so of a reader and a writer that overlap one sees the other.
type rwCheck struct {
	readers, writers atomic.Int64
	mostReaders      atomic.Int64
	violations       atomic.Int64 // a writer beside a reader or another writer
}

func (c *rwCheck) enter(read bool) {
	if read {
		n := c.readers.Add(1)
		if c.writers.Load() != 0 {
			c.violations.Add(1)
		}
		for m := c.mostReaders.Load(); n > m && !c.mostReaders.CompareAndSwap(m, n); m = c.mostReaders.Load() {
		}
		return
	}
	if c.writers.Add(1) != 1 || c.readers.Load() != 0 {
		c.violations.Add(1)
	}
}

func (c *rwCheck) leave(read bool) {
	if read {
		c.readers.Add(-1)
	} else {
		c.writers.Add(-1)
	}
}

// rwTally is one kind's figures over every round.
type rwTally struct {
	reads, writes   []time.Duration // from the Lock call to its return
	elapsed         time.Duration
	opsPerSecRounds []float64
	check           rwCheck
}

// runRWBench has cfg.workers workers, each with its own go-redis client and
// lockmw.Client, do the same work on one name, once on an RWMutex and once
// on a Mutex, taking turns for cfg.rounds rounds of cfg.duration each:
// each operation is a read (probability cfg.readShare) or a write, holding
// the lock for cfg.rwWork (a sleep: the work).
func runRWBench(ctx context.Context, e *env, cfg config) ([]*result, error) {
	workers := make([]*rwWorker, cfg.workers)
	for i := range workers {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-rwmutex-%d", i))
		defer rdb.Close()
		c := lockmw.New(rdb)
		defer c.Close()
		workers[i] = &rwWorker{rdb: rdb, c: c, rw: c.RWMutex(rwBenchName), mu: c.Mutex(rwBenchMutexed)}
	}
	for _, w := range workers { // warm up: connections and scripts, each kind and side
		for _, k := range []struct{ onMutex, read bool }{{false, true}, {false, false}, {true, false}} {
			release, err := w.lock(ctx, k.onMutex, k.read)
			if err != nil {
				return nil, fmt.Errorf("warm-up lock: %w", err)
			}
			if err := release(); err != nil {
				return nil, fmt.Errorf("warm-up unlock: %w", err)
			}
		}
	}
	var rw, mu rwTally
	for round := range cfg.rounds {
		kinds := []*rwTally{&rw, &mu}
		if round%2 == 1 { // the first of a round is the second of the previous one
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		for _, t := range kinds {
			if err := rwRound(ctx, workers, cfg, t == &mu, t); err != nil {
				return nil, err
			}
		}
	}
	return rwResults(cfg, &rw, &mu), nil
}

// rwRound runs the workers together for cfg.duration on one kind and adds
// what they did to t.
func rwRound(ctx context.Context, workers []*rwWorker, cfg config, onMutex bool, t *rwTally) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	reads := make([][]time.Duration, len(workers))
	writes := make([][]time.Duration, len(workers))
	errs := make([]error, len(workers))
	start := time.Now()
	together(len(workers), func(i int, _ time.Time) {
		reads[i], writes[i], errs[i] = rwOps(runCtx, workers[i], cfg, onMutex, &t.check)
	}, after{cfg.duration, cancel})
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ops := 0
	for i := range workers {
		t.reads = append(t.reads, reads[i]...)
		t.writes = append(t.writes, writes[i]...)
		ops += len(reads[i]) + len(writes[i])
	}
	t.elapsed += elapsed
	t.opsPerSecRounds = append(t.opsPerSecRounds, float64(ops)/elapsed.Seconds())
	return nil
}

// rwOps is one worker's loop until ctx ends: each operation a read or a
// write, timed from the Lock call to its return, holding for cfg.rwWork.
func rwOps(ctx context.Context, w *rwWorker, cfg config, onMutex bool, check *rwCheck) (reads, writes []time.Duration, err error) {
	for ctx.Err() == nil {
		read := rand.Float64() < cfg.readShare
		t0 := time.Now()
		release, err := w.lock(ctx, onMutex, read)
		if err != nil {
			if ctx.Err() != nil {
				break // the end of the round, while waiting
			}
			return nil, nil, err
		}
		if read {
			reads = append(reads, time.Since(t0))
		} else {
			writes = append(writes, time.Since(t0))
		}
		check.enter(read)
		time.Sleep(cfg.rwWork) // the work, under the lock
		check.leave(read)
		if err := release(); err != nil {
			return nil, nil, fmt.Errorf("unlock: %w", err)
		}
	}
	return reads, writes, nil
}
