package main

import (
	"context"
	"fmt"
	"time"
)

// pingEvery is how often the pinger of a contended run sends a PING.
const pingEvery = 2 * time.Millisecond

// pinger times PING round trips on an otherwise idle go-redis client of its
// own, every pingEvery, while a contended run goes on: the round trip the
// lock's hand-off is judged against, on the machine as loaded as the run
// makes it.
type pinger struct {
	ds   []time.Duration
	err  error
	done chan struct{}
}

// startPinger pings until ctx ends; wait returns the figures.
func startPinger(ctx context.Context, e *env) *pinger {
	p := &pinger{done: make(chan struct{})}
	rdb := e.newRedis("rlock-bench-pinger")
	go func() {
		defer close(p.done)
		defer rdb.Close()
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		// The first PING connects, untimed; the second is timed however
		// short the run: a run of a few hundred ms on a loaded machine can
		// end before the connection is made, and a PING p50 of 0 would
		// judge its hand-offs against nothing.
		first, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := rdb.Ping(first).Err()
		start := time.Now()
		if err == nil {
			err = rdb.Ping(first).Err()
		}
		took := time.Since(start)
		cancel()
		if err != nil {
			p.fail(first, err)
			return
		}
		p.ds = append(p.ds, took)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			start := time.Now()
			if err := rdb.Ping(ctx).Err(); err != nil {
				p.fail(ctx, err)
				return
			}
			p.ds = append(p.ds, time.Since(start))
		}
	}()
	return p
}

// fail records err unless the run was over.
func (p *pinger) fail(ctx context.Context, err error) {
	if ctx.Err() == nil {
		p.err = fmt.Errorf("pinger: %w", err)
	}
}

// wait waits for the pinger to end and returns its PING p50.
func (p *pinger) wait() (time.Duration, error) {
	<-p.done
	return percentile(sorted(p.ds), 0.5), p.err
}
