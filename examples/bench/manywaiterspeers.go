package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// runManyWaitersPeer is many-waiters for a lock other than rlock: one
// client holds cfg.waiters names, another has one goroutine waiting on
// each; once the waiting client has sent about one attempt per waiter
// (the counting hook counts a command when it is sent, perhaps before a
// pool connection is free for it), the holder unlocks the names one by one. Wake-up latency (Unlock of name i called → its waiter's
// Lock returns) and the waiting client's commands per wake-up while the
// holder unlocks (a polling waiter keeps polling meanwhile).
func runManyWaitersPeer(ctx context.Context, e *env, cfg config, kind string) (*result, error) {
	const holderName, waiterName = "rlock-bench-holder", "rlock-bench-waiter"
	n := cfg.waiters
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("rlock-bench:wait:%d", i)
	}
	counter := newCmdCounter()
	hrdb, wrdb := e.newRedis(holderName), e.newRedis(waiterName, counter)
	defer hrdb.Close()
	defer wrdb.Close()
	holders, closeHolders, err := newLockers(kind, hrdb, nil, names, cfg)
	if err != nil {
		return nil, err
	}
	defer closeHolders()
	waiters, closeWaiters, err := newLockers(kind, wrdb, counter, names, cfg)
	if err != nil {
		return nil, err
	}
	defer closeWaiters()

	held := make([]context.Context, n)
	if err := parallel(n, acquireParallel, func(i int) (err error) {
		held[i], err = holders[i].lock(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(n)*10*time.Millisecond)
	defer cancel()
	w := startWaiters(wctx, waiters)
	lat, cmds, err := unlockInTurn(wctx, holders, held, w, counter)
	cancel()
	if err := errors.Join(err, w.finish()); err != nil {
		return nil, err
	}
	conns, err := pubsubConns(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	sorted(lat)
	r := newResult("many-waiters", kind)
	r.param("waiters", n)
	r.num("pubsub_conns_waiter", "pub/sub connections: waiting client=%.0f", float64(conns[waiterName]))
	r.num("pubsub_conns_holder", "holder=%.0f", float64(conns[holderName]))
	r.dur("wakeup_p50", "wake-up p50", percentile(lat, 0.5))
	r.dur("wakeup_p99", "p99", percentile(lat, 0.99))
	r.dur("wakeup_max", "max", lat[len(lat)-1])
	r.num("waiter_cmds_per_wakeup", "waiter cmds/wake-up=%.2f", float64(cmds)/float64(n))
	return r, nil
}

// waiterSet is one goroutine waiting on each of many lockers; each records
// when its Lock returned, then holds until finish.
type waiterSet struct {
	base     time.Time
	woke     []time.Duration
	errs     []error
	acquired chan int
	done     chan struct{}
	wg       sync.WaitGroup
}

func startWaiters(ctx context.Context, ls []locker) *waiterSet {
	w := &waiterSet{base: time.Now(), woke: make([]time.Duration, len(ls)), errs: make([]error, len(ls)),
		acquired: make(chan int, len(ls)), done: make(chan struct{})}
	for i, l := range ls {
		w.wg.Go(func() {
			h, err := l.lock(ctx)
			w.woke[i] = time.Since(w.base)
			w.acquired <- i
			if err != nil {
				w.errs[i] = fmt.Errorf("waiter %d: %w", i, err)
				return
			}
			<-w.done
			w.errs[i] = l.unlock(h)
		})
	}
	return w
}

// finish lets the waiters release and waits for them.
func (w *waiterSet) finish() error {
	close(w.done)
	w.wg.Wait()
	return errors.Join(w.errs...)
}

// unlockInTurn waits until the waiting client has sent one command per
// waiter (about one attempt each), then unlocks each held name in turn and
// waits for every waiter to wake. It returns each name's wake-up latency
// and the waiting client's commands from the first unlock to the last
// wake-up.
func unlockInTurn(ctx context.Context, holders []locker, held []context.Context, w *waiterSet, counter *cmdCounter) ([]time.Duration, int64, error) {
	n := len(holders)
	if err := waitCommands(ctx, counter, int64(n)); err != nil {
		return nil, 0, err
	}
	before := counter.snapshot()
	unlocked := make([]time.Duration, n)
	for i, h := range held {
		unlocked[i] = time.Since(w.base)
		if err := holders[i].unlock(h); err != nil {
			return nil, 0, fmt.Errorf("holder unlock %d: %w", i, err)
		}
	}
	for range n {
		select {
		case <-w.acquired:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("waiters still waiting: %w", ctx.Err())
		}
	}
	_, cmds := delta(before, counter.snapshot())
	lat := make([]time.Duration, n)
	for i := range lat {
		lat[i] = w.woke[i] - unlocked[i]
	}
	return lat, cmds, nil
}

// waitCommands polls until counter has counted at least n commands.
func waitCommands(ctx context.Context, counter *cmdCounter, n int64) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, total := delta(nil, counter.snapshot()); total >= n {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("waiters did not all try: %w", ctx.Err())
		}
	}
}
