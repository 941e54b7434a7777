package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The mixed scenario's targets, for the Redisson side as a whole.
const (
	mixedGapTarget   = 2 * time.Second // longest time without a Redisson hold
	mixedShareTarget = 0.25            // Redisson's share of holds / its fair share
)

// mix is one pair of the mixed scenario: how many rlock workers and how
// many Redisson workers contend.
type mix struct{ rlock, redisson int }

func (m mix) String() string { return fmt.Sprintf("%d:%d", m.rlock, m.redisson) }

// allMixes is -mix all: every pair of 1, 2 and 4.
func allMixes() []mix {
	var ms []mix
	for _, n := range []int{1, 2, 4} {
		for _, m := range []int{1, 2, 4} {
			ms = append(ms, mix{n, m})
		}
	}
	return ms
}

// mixedWorker is one worker of the mixed scenario and its side.
type mixedWorker struct {
	side string // "rlock" or "redisson"
	l    locker
}

// runMixed has mx.rlock rlock workers (each its own go-redis client and
// lockmw.Client) and mx.redisson Redisson workers (each its own go-redis
// client and Redisson process) take turns on one name for cfg.duration,
// holding it cfg.hold and pausing 0 to 2×cfg.think between turns; with
// cfg.mixedPermits > 0 the name is a semaphore of that many permits.
func runMixed(ctx context.Context, e *env, cfg config, mx mix) (*result, error) {
	name := mixedName(cfg, mx)
	workers := newMixedWorkers(e, cfg, name, mx)
	defer func() {
		for _, w := range workers {
			_ = w.l.close()
		}
	}()
	for _, w := range workers { // warm up: connections and scripts
		h, err := w.l.lock(ctx)
		if err != nil {
			return nil, err
		}
		if err := w.l.unlock(h); err != nil {
			return nil, err
		}
	}
	turns, err := runMixedTurns(ctx, workers, cfg)
	if err != nil {
		return nil, err
	}
	return mixedResult(cfg, mx, workers, turns), nil
}

// newMixedWorkers makes the rlock workers first, then the Redisson ones.
func newMixedWorkers(e *env, cfg config, name string, mx mix) []mixedWorker {
	var ws []mixedWorker
	for i := range mx.rlock {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-mixed-rlock-%d", i))
		ws = append(ws, mixedWorker{"rlock", closing(newMixedLocker(cfg, rdb, name, "rlock"), rdb.Close)})
	}
	for i := range mx.redisson {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-mixed-redisson-%d", i))
		ws = append(ws, mixedWorker{"redisson", closing(newMixedLocker(cfg, rdb, name, "redisson"), rdb.Close)})
	}
	return ws
}

// runMixedTurns runs the workers together for cfg.duration and returns each
// one's turns; a Lock still waiting at the end is a turn with acquired -1.
func runMixedTurns(ctx context.Context, workers []mixedWorker, cfg config) ([][]turn, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	turns := make([][]turn, len(workers))
	errs := make([]error, len(workers))
	together(len(workers), func(i int, base time.Time) {
		turns[i], errs[i] = takeTurns(runCtx, i, workers[i].l, base, cfg, uniformThink)
	}, after{cfg.duration, cancel})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return turns, ctx.Err()
}

// uniformThink is a pause drawn uniformly from 0 to 2×-think.
func uniformThink(c config) time.Duration { return rand.N(2*c.think + 1) }

// closingLocker is a locker that also closes its go-redis client.
type closingLocker struct {
	locker
	closeRedis func() error
}

func closing(l locker, closeRedis func() error) locker { return closingLocker{l, closeRedis} }

func (c closingLocker) close() error { return errors.Join(c.locker.close(), c.closeRedis()) }
