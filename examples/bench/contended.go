package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// The contended scenario's targets.
const (
	utilizationTarget = 0.75
	handoffPingTarget = 3.0 // hand-off p50 / PING p50
	cmdsPerAcqTarget  = 4.0
	fairnessTarget    = 3.0 // max/min acquisitions per worker
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

// runContended has cfg.workers workers, each with its own go-redis client
// and locker, take turns on one name for cfg.duration.
func runContended(ctx context.Context, e *env, cfg config, kind string) (*result, error) {
	const name = "rlock-bench:contended"
	counter := newCmdCounter()
	lockers := make([]locker, cfg.workers)
	for i := range lockers {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-contended-%d", i), counter)
		defer rdb.Close()
		lockers[i] = newLocker(kind, rdb, name, cfg)
		defer lockers[i].close()
	}
	// Warm up: connections and scripts, one worker at a time.
	for _, l := range lockers {
		h, err := l.lock(ctx)
		if err != nil {
			return nil, err
		}
		if err := l.unlock(h); err != nil {
			return nil, err
		}
	}
	ping, err := pingP50(ctx, e, 500)
	if err != nil {
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
	turns := make([][]turn, cfg.workers)
	errs := make([]error, cfg.workers)
	start := make(chan struct{})
	var base time.Time
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() {
			<-start
			turns[i], errs[i] = worker(runCtx, i, l, base, cfg)
		})
	}
	base = time.Now()
	stop := time.AfterFunc(cfg.duration, cancel)
	defer stop.Stop()
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	cmdsAfter := counter.snapshot()
	// Each client has its own hand-off channel for the name
	// (rlock_handoff:{name}:<clientID>, from the lockmw docs), so a hand-off
	// message reaches one connection: the chosen waiter's client.
	var handoffSubs int64 = -1
	if kind == "rlock" {
		chans, err := e.admin.PubSubChannels(ctx, "rlock_handoff:{"+name+"}:*").Result()
		if err != nil {
			return nil, err
		}
		subs, err := e.admin.PubSubNumSub(ctx, chans...).Result()
		if err != nil {
			return nil, err
		}
		handoffSubs = 0
		for _, n := range subs {
			handoffSubs = max(handoffSubs, n)
		}
	}
	statsAfter, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	cpuAfter, err := redisCPU(ctx, e.admin)
	if err != nil {
		return nil, err
	}

	// Every turn that began before the end counts; holds are clipped to it.
	var all []turn
	perWorker := make([]int, cfg.workers)
	var held time.Duration
	for i, ts := range turns {
		for _, t := range ts {
			if t.acquired >= cfg.duration {
				continue
			}
			all = append(all, t)
			perWorker[i]++
			held += min(t.unlockCall, cfg.duration) - t.acquired
		}
	}
	slices.SortFunc(all, func(a, b turn) int { return int(a.acquired - b.acquired) })
	var handoff, handoffCall, waits []time.Duration
	for i, t := range all {
		waits = append(waits, t.acquired-t.called)
		if i > 0 && all[i-1].worker != t.worker {
			handoff = append(handoff, t.acquired-all[i-1].released)
			handoffCall = append(handoffCall, t.acquired-all[i-1].unlockCall)
		}
	}
	sorted(handoff)
	sorted(handoffCall)
	sorted(waits)
	acqs := len(all)
	lo, hi := slices.Min(perWorker), slices.Max(perWorker)
	fair := math.Inf(1)
	if lo > 0 {
		fair = float64(hi) / float64(lo)
	}
	clientCmds, clientTotal := delta(cmdsBefore, cmdsAfter)
	srv := serverDelta(statsBefore, statsAfter, clientCmds)
	util := float64(held) / float64(cfg.duration)
	cmdsPerAcq := float64(clientTotal) / float64(max(acqs, 1))

	r := newResult("contended", kind)
	r.param("workers", cfg.workers)
	r.param("hold", cfg.hold)
	r.param("think", cfg.think)
	r.param("duration", cfg.duration)
	if kind == "poll" {
		r.param("retry", fmt.Sprintf("%v-%v", cfg.pollMin, cfg.pollMax))
	}
	r.num("acquisitions_per_sec", "acq/s=%.0f", float64(acqs)/cfg.duration.Seconds())
	r.num("utilization", "util=%.3f", util)
	r.dur("handoff_p50", "hand-off p50", percentile(handoff, 0.5))
	r.dur("handoff_p99", "p99", percentile(handoff, 0.99))
	r.dur("handoff_from_unlock_call_p50", "(from Unlock call p50", percentile(handoffCall, 0.5))
	r.dur("handoff_from_unlock_call_p99", "p99", percentile(handoffCall, 0.99))
	r.parts[len(r.parts)-1] += ")"
	r.dur("wait_p50", "wait p50", percentile(waits, 0.5))
	r.dur("wait_p99", "p99", percentile(waits, 0.99))
	r.num("client_cmds_per_acq", "client cmds/acq=%.2f", cmdsPerAcq)
	r.num("server_cmds_per_acq", "(commandstats %.1f/acq)", float64(srv.total)/float64(max(acqs, 1)))
	r.num("redis_cpu_us_per_acq", "redis-server CPU/acq=%.1fµs", float64(cpuAfter-cpuBefore)/1e3/float64(max(acqs, 1)))
	r.Metrics["commandstats_us_per_acq"] = round(float64(srv.topUsec)/float64(max(acqs, 1)), 2)
	r.num("acq_per_worker_min", "per worker min=%.0f", float64(lo))
	r.num("acq_per_worker_max", "max=%.0f", float64(hi))
	r.num("acq_per_worker_max_over_min", "(%.2f)", fair)
	r.dur("ping_p50", "PING p50", ping)
	if handoffSubs >= 0 {
		r.num("handoff_channel_subscribers", "connections per hand-off message=%.0f", float64(handoffSubs))
	}
	r.Metrics["acquisitions"] = float64(acqs)
	r.Breakdown["client_cmds_per_acq"] = perOp(clientCmds, acqs)
	r.Breakdown["commandstats_per_acq"] = perOp(srv.calls, acqs)
	r.Breakdown["commandstats_usec_per_call"] = srv.usecPerCall()

	r.atLeast(fmt.Sprintf("util>=%.2f", utilizationTarget), util, utilizationTarget)
	hoRatio := float64(percentile(handoff, 0.5)) / float64(max(ping, 1))
	r.Metrics["handoff_p50_over_ping_p50"] = round(hoRatio, 3)
	r.atMost(fmt.Sprintf("hand-off p50<=%.0f×PING (%.1f×)", handoffPingTarget, hoRatio), hoRatio, handoffPingTarget)
	r.atMost(fmt.Sprintf("cmds/acq<=%.0f", cmdsPerAcqTarget), cmdsPerAcq, cmdsPerAcqTarget)
	r.atMost(fmt.Sprintf("max/min<=%.0f", fairnessTarget), fair, fairnessTarget)
	return r, nil
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
