package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
)

// groundPings is how many PINGs time the ground's round trip at start.
const groundPings = 200

// ground is the network between the clients of a run and redis-server.
type ground struct {
	proxy *faultproxy.Proxy // nil: the clients dial the server directly
}

// startGround puts a faultproxy delaying each direction by latency between
// every client of the run and the server at addr, and returns the address
// the clients dial. With latency 0 it returns addr: no proxy.
func startGround(addr string, latency time.Duration) (*ground, string, error) {
	if latency <= 0 {
		return &ground{}, addr, nil
	}
	p, err := faultproxy.Start(addr)
	if err != nil {
		return nil, "", err
	}
	p.SetRequestLatency(latency)
	p.SetLatency(latency)
	return &ground{proxy: p}, p.Addr(), nil
}

func (g *ground) close() error {
	if g.proxy == nil {
		return nil
	}
	return g.proxy.Close()
}

// describe is the ground in words, for the header: where the server is,
// whether the clients reach it through the proxy, and the PING p50 that
// results.
func describe(ctx context.Context, e *env, cfg config) (string, time.Duration, error) {
	ping, err := pingP50(ctx, e, groundPings)
	if err != nil {
		return "", 0, err
	}
	var where string
	switch {
	case cfg.latency > 0:
		where = fmt.Sprintf("through faultproxy, %v each way", cfg.latency)
	case e.own:
		where = "loopback"
	default:
		where = "direct to -addr"
	}
	return fmt.Sprintf("%s; PING p50 %s", where, fmtDur(ping)), ping, nil
}
