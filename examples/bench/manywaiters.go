package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// runManyWaiters has one Client hold cfg.waiters names and another wait on
// each with one goroutine; then the holder unlocks them one by one.
func runManyWaiters(ctx context.Context, e *env, cfg config) (*result, error) {
	const holderName, waiterName = "rlock-bench-holder", "rlock-bench-waiter"
	n := cfg.waiters
	counter := newCmdCounter()
	hrdb := e.newRedis(holderName)
	defer hrdb.Close()
	wrdb := e.newRedis(waiterName, counter)
	defer wrdb.Close()
	holder, waiter := lockmw.New(hrdb), lockmw.New(wrdb)
	defer holder.Close()
	defer waiter.Close()

	names := make([]string, n)
	held := make([]context.Context, n)
	for i := range names {
		names[i] = fmt.Sprintf("rlock-bench:wait:%d", i)
	}
	if err := parallel(n, acquireParallel, func(i int) error {
		h, err := holder.Mutex(names[i]).Lock(ctx)
		held[i] = h
		return err
	}); err != nil {
		return nil, err
	}
	released := false
	defer func() {
		if !released {
			for i, h := range held {
				_ = holder.Mutex(names[i]).Unlock(h)
			}
		}
	}()

	// The waiters: each records when its Lock returns, then holds until told.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(n)*10*time.Millisecond)
	defer cancel()
	base := time.Now()
	woke := make([]time.Duration, n)
	errs := make([]error, n)
	acquired := make(chan int, n)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := waiter.Mutex(names[i])
			h, err := m.Lock(wctx)
			if err != nil {
				errs[i] = err
				acquired <- i
				return
			}
			woke[i] = time.Since(base)
			acquired <- i
			<-done
			errs[i] = m.Unlock(h)
		})
	}
	finish := func() error {
		close(done)
		wg.Wait()
		return errors.Join(errs...)
	}

	// Wait until every waiter is queued in Redis and subscribed, and the
	// waiting client has gone quiet.
	if err := waitQueued(wctx, e.admin, names, counter); err != nil {
		cancel()
		return nil, errors.Join(err, finish())
	}
	conns, err := pubsubConns(ctx, e.admin)
	if err != nil {
		cancel()
		return nil, errors.Join(err, finish())
	}
	waitCmdsBefore := counter.snapshot()

	unlocked := make([]time.Duration, n)
	for i, h := range held {
		unlocked[i] = time.Since(base)
		if err := holder.Mutex(names[i]).Unlock(h); err != nil {
			cancel()
			return nil, errors.Join(err, finish())
		}
	}
	released = true
	for range n {
		select {
		case <-acquired:
		case <-wctx.Done():
			return nil, errors.Join(fmt.Errorf("waiters still waiting: %w", wctx.Err()), finish())
		}
	}
	byName, waitCmds := delta(waitCmdsBefore, counter.snapshot())
	if err := finish(); err != nil {
		return nil, err
	}

	lat := make([]time.Duration, n)
	for i := range lat {
		lat[i] = woke[i] - unlocked[i]
	}
	sorted(lat)

	r := newResult("many-waiters", "rlock")
	r.param("waiters", n)
	r.num("pubsub_conns_waiter", "pub/sub connections: waiting client=%.0f", float64(conns[waiterName]))
	r.num("pubsub_conns_holder", "holder=%.0f", float64(conns[holderName]))
	r.dur("wakeup_p50", "wake-up p50", percentile(lat, 0.5))
	r.dur("wakeup_p99", "p99", percentile(lat, 0.99))
	r.dur("wakeup_max", "max", lat[len(lat)-1])
	r.num("waiter_cmds_per_wakeup", "waiter cmds/wake-up=%.2f", float64(waitCmds)/float64(n))
	r.Breakdown["waiter_cmds"] = perOp(byName, 1)
	r.atMost("pub/sub conns per client<=1", float64(max(conns[waiterName], conns[holderName])), 1)
	return r, nil
}

// waitQueued polls until each name's queue holds a waiter, each name's
// hand-off channel has a subscriber, and the counter has not moved for two
// polls.
func waitQueued(ctx context.Context, admin *redis.Client, names []string, counter *cmdCounter) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	var last map[string]int64
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("waiters did not all queue: %w", ctx.Err())
		}
		ok, err := allQueued(ctx, admin, names)
		if err != nil {
			return err
		}
		now := counter.snapshot()
		if _, moved := delta(last, now); ok && last != nil && moved == 0 {
			return nil
		}
		last = now
	}
}

func allQueued(ctx context.Context, admin *redis.Client, names []string) (bool, error) {
	chans := make([]string, len(names))
	cards := make([]*redis.IntCmd, len(names))
	var subs *redis.MapStringIntCmd
	_, err := admin.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			// rlock's key names, from the lockmw package documentation.
			cards[i] = p.ZCard(ctx, "rlock_queue:{"+n+"}")
			chans[i] = "redisson_lock__channel:{" + n + "}" // subscribed with the hand-off channel
		}
		subs = p.PubSubNumSub(ctx, chans...)
		return nil
	})
	if err != nil {
		return false, err
	}
	for _, c := range cards {
		if c.Val() < 1 {
			return false, nil
		}
	}
	for _, ch := range chans {
		if subs.Val()[ch] < 1 {
			return false, nil
		}
	}
	return true, nil
}
