package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// stallLimit is how long a Lock call of the parallel scenario may wait past
// the end of its run (or of its warm-up's start) before the tool gives up
// on it and counts it as stalled. Seen with rueidislock on a loaded machine:
// its acquire script runs under a 20 ms timeout (TryNextAfter), and after
// one that timed out, WithContext waits for a client-side caching
// invalidation of a key that nobody changes, until its context ends.
const stallLimit = 5 * time.Second

// loadRun is what the goroutines of one parallel run measured.
type loadRun struct {
	pairs   []time.Duration // each lock+unlock, Lock called → Unlock returned, sorted
	elapsed time.Duration   // the start → the last pair counted returned (without one, the end)
	stalled int             // goroutines whose last Lock call stalled (stallLimit)
}

// loop is one goroutine's part of a run.
type loop struct {
	pairs   []time.Duration
	last    time.Duration // the start → its last pair returned
	stalled bool
	err     error
}

// runLoad has one goroutine per locker lock and unlock it, again and again,
// from one start until d has passed; each goroutine finishes the pair under
// way, so every pair counted is whole. A Lock call still waiting stallLimit
// after d is given up (its context ends). The first error stops every
// goroutine.
func runLoad(ctx context.Context, lockers []locker, d time.Duration) (loadRun, error) {
	loops := make([]loop, len(lockers))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	t0 := time.Now()
	together(len(lockers), func(i int, base time.Time) {
		loops[i] = lockLoop(ctx, rctx, lockers[i], base, &stop)
		if loops[i].err != nil {
			stop.Store(true)
		}
	}, after{d, func() { stop.Store(true) }}, after{d + stallLimit, cancel})
	var run loadRun
	var errs []error
	for _, lp := range loops {
		run.pairs = append(run.pairs, lp.pairs...)
		run.elapsed = max(run.elapsed, lp.last)
		if lp.stalled {
			run.stalled++
		}
		errs = append(errs, lp.err)
	}
	if len(run.pairs) == 0 { // every goroutine stalled: none, for the whole run
		run.elapsed = time.Since(t0)
	}
	sorted(run.pairs)
	return run, errors.Join(errs...)
}

// lockLoop takes and releases l on rctx until stop is set, timing each
// pair. An error because rctx ended while ctx did not is a stall.
func lockLoop(ctx, rctx context.Context, l locker, base time.Time, stop *atomic.Bool) loop {
	var lp loop
	for !stop.Load() {
		t := time.Now()
		if err := lockPair(rctx, l); err != nil {
			lp.stalled = rctx.Err() != nil && ctx.Err() == nil
			if !lp.stalled {
				lp.err = err
			}
			return lp
		}
		lp.pairs = append(lp.pairs, time.Since(t))
		lp.last = time.Since(base)
	}
	return lp
}

// warmUpAll has every locker take and release its lock a few times, all at
// once: the client dials the connections the run will use and loads its
// scripts before the measure. It returns how many lockers stalled (a Lock
// call still waiting stallLimit after the start).
func warmUpAll(ctx context.Context, lockers []locker) (int, error) {
	const pairs = 3
	wctx, cancel := context.WithTimeout(ctx, stallLimit)
	defer cancel()
	var stalled atomic.Int64
	err := parallel(len(lockers), len(lockers), func(i int) error {
		for range pairs {
			if err := lockPair(wctx, lockers[i]); err != nil {
				if wctx.Err() != nil && ctx.Err() == nil {
					stalled.Add(1)
					return nil
				}
				return fmt.Errorf("warm-up: %w", err)
			}
		}
		return nil
	})
	return int(stalled.Load()), err
}
