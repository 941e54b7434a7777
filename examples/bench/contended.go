package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// turn is one acquisition by one worker; times are offsets from the start
// of the run on the monotonic clock.
type turn struct {
	worker     int
	called     time.Duration // Lock called
	acquired   time.Duration // Lock returned
	unlockCall time.Duration // Unlock called
	released   time.Duration // Unlock returned
}

// contendedName is the one name the contended workers take turns on; every
// lock kind uses it, one after the other.
const contendedName = "rlock-bench:contended"

// contendedRun is what one contended run measured.
type contendedRun struct {
	turns       [][]turn // by worker
	pingBefore  time.Duration
	pingDuring  time.Duration
	clientCmds  map[string]int64 // by command
	clientTotal int64
	srv         serverCounts
	redisCPU    time.Duration
	handoffSubs int64 // rlock: subscribers of a hand-off channel; -1 otherwise
}

// runContended has cfg.workers workers, each with its own go-redis client
// and locker of kind, take turns on one name for cfg.duration.
func runContended(ctx context.Context, e *env, cfg config, kind string) (*result, error) {
	counter := newCmdCounter()
	lockers := make([]locker, cfg.workers)
	for i := range lockers {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-contended-%d", i), counter)
		defer rdb.Close()
		l, err := newLocker(kind, rdb, counter, contendedName, cfg)
		if err != nil {
			return nil, err
		}
		defer l.close()
		lockers[i] = l
	}
	if err := warmUp(ctx, lockers); err != nil {
		return nil, err
	}
	m, err := measureContended(ctx, e, cfg, lockers, counter)
	if err != nil {
		return nil, err
	}
	m.handoffSubs = -1
	if kind == "rlock" {
		if m.handoffSubs, err = handoffSubscribers(ctx, e); err != nil {
			return nil, err
		}
	}
	return contendedResult(cfg, kind, m), nil
}

// warmUp takes and releases the lock with each locker, one at a time: the
// connections are dialled and the scripts loaded before the run.
func warmUp(ctx context.Context, lockers []locker) error {
	for _, l := range lockers {
		if err := lockPair(ctx, l); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// measureContended runs the workers for cfg.duration, a pinger beside
// them, between two readings of the counters.
func measureContended(ctx context.Context, e *env, cfg config, lockers []locker, counter *cmdCounter) (*contendedRun, error) {
	m := &contendedRun{}
	var err error
	if m.pingBefore, err = pingP50(ctx, e, 500); err != nil {
		return nil, err
	}
	statsBefore, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	cpuBefore, err := redisCPU(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	cmdsBefore := counter.snapshot()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pings := startPinger(runCtx, e)
	m.turns, err = runWorkers(runCtx, lockers, cfg, cancel)
	cancel() // ends the pinger when a worker failed early
	ping, perr := pings.wait()
	if err := errors.Join(err, perr, ctx.Err()); err != nil {
		return nil, err
	}
	m.pingDuring = ping

	m.clientCmds, m.clientTotal = delta(cmdsBefore, counter.snapshot())
	statsAfter, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	cpuAfter, err := redisCPU(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	m.srv = serverDelta(statsBefore, statsAfter, m.clientCmds)
	m.redisCPU = cpuAfter - cpuBefore
	return m, nil
}

// runWorkers starts one worker per locker at once, calls stop after
// cfg.duration and returns every worker's turns when all have ended.
func runWorkers(ctx context.Context, lockers []locker, cfg config, stop context.CancelFunc) ([][]turn, error) {
	turns := make([][]turn, len(lockers))
	errs := make([]error, len(lockers))
	together(len(lockers), func(i int, base time.Time) {
		turns[i], errs[i] = worker(ctx, i, lockers[i], base, cfg)
	}, after{cfg.duration, stop})
	return turns, errors.Join(errs...)
}

// handoffSubscribers is how many connections receive one rlock hand-off
// message: each client has its own hand-off channel for the name
// (rlock_handoff:{name}:<clientID>, from the lockmw docs), so 1.
func handoffSubscribers(ctx context.Context, e *env) (int64, error) {
	chans, err := e.admin.PubSubChannels(ctx, "rlock_handoff:{"+contendedName+"}:*").Result()
	if err != nil {
		return 0, err
	}
	subs, err := e.admin.PubSubNumSub(ctx, chans...).Result()
	if err != nil {
		return 0, err
	}
	var most int64
	for _, n := range subs {
		most = max(most, n)
	}
	return most, nil
}

// worker takes turns until ctx ends, pausing -think between them; only
// the turns that got the lock count.
func worker(ctx context.Context, id int, l locker, base time.Time, cfg config) ([]turn, error) {
	ts, err := takeTurns(ctx, id, l, base, cfg, func(c config) time.Duration { return c.think })
	if n := len(ts); n > 0 && ts[n-1].acquired < 0 {
		ts = ts[:n-1]
	}
	return ts, err
}

// takeTurns takes turns until ctx ends, holding the lock -hold and pausing
// think(cfg) between turns. A turn still waiting when ctx ends comes last,
// with acquired -1.
func takeTurns(ctx context.Context, id int, l locker, base time.Time, cfg config, think func(config) time.Duration) ([]turn, error) {
	var ts []turn
	for ctx.Err() == nil {
		t := turn{worker: id, called: time.Since(base)}
		h, err := l.lock(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.acquired = -1 // still waiting at the end
				return append(ts, t), nil
			}
			return ts, fmt.Errorf("worker %d: lock: %w", id, err)
		}
		t.acquired = time.Since(base)
		sleep(cfg.hold)
		t.unlockCall = time.Since(base)
		err = l.unlock(h)
		t.released = time.Since(base)
		if err != nil {
			return ts, fmt.Errorf("worker %d: unlock: %w", id, err)
		}
		ts = append(ts, t)
		sleep(think(cfg))
	}
	return ts, nil
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// pingP50 is the median PING round trip on the admin connection.
func pingP50(ctx context.Context, e *env, n int) (time.Duration, error) {
	ds, _, err := timeOps(n, func() error { return e.admin.Ping(ctx).Err() })
	if err != nil {
		return 0, err
	}
	return percentile(sorted(ds), 0.5), nil
}
