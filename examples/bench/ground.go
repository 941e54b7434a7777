package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
)

// groundPings is how many PINGs time the ground's round trip at start.
const groundPings = 200

// dialTimeout bounds a connection's dial through the ground's Dialer, as
// go-redis' default dialer does.
const dialTimeout = 5 * time.Second

// ground is the network between the clients of a run and its servers.
type ground struct {
	proxies []*faultproxy.Proxy
	// via maps a server's address (a cluster node's, as the cluster
	// announces it) to its proxy's; empty: the clients dial the servers
	// directly.
	via map[string]string
}

// errNoProxy is the Dialer's error for an address the ground has no proxy
// for: a client of a -latency run never reaches a server around the delay.
var errNoProxy = errors.New("no -latency proxy for this address")

// startGround puts a faultproxy delaying each direction by latency between
// every client of the run and each server at addrs. With latency 0 it
// starts none: the clients dial the servers.
func startGround(addrs []string, latency time.Duration) (*ground, error) {
	g := &ground{via: map[string]string{}}
	if latency <= 0 {
		return g, nil
	}
	for _, a := range addrs {
		p, err := faultproxy.Start(a)
		if err != nil {
			return nil, errors.Join(err, g.close())
		}
		p.SetRequestLatency(latency)
		p.SetLatency(latency)
		g.proxies = append(g.proxies, p)
		g.via[a] = p.Addr()
	}
	return g, nil
}

// addr is what a client dials to reach the server at server: its proxy,
// or server itself without one.
func (g *ground) addr(server string) string {
	if p, ok := g.via[server]; ok {
		return p
	}
	return server
}

// dialer is a go-redis Dialer that reaches every server through its proxy,
// for the cluster clients, which learn the nodes' addresses from the
// cluster; nil (go-redis' own) without proxies. An address without a proxy
// is an error, not a direct connection.
func (g *ground) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if len(g.via) == 0 {
		return nil
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p, ok := g.via[addr]
		if !ok {
			return nil, fmt.Errorf("bench: dialing %s: %w", addr, errNoProxy)
		}
		return d.DialContext(ctx, network, p)
	}
}

func (g *ground) close() error {
	var errs []error
	for _, p := range g.proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// describe is the ground in words, for the header: where the server is
// (or the cluster's masters are), whether the clients reach it through the
// proxies, and the PING p50 that results (on the first master of a
// cluster).
func describe(ctx context.Context, e *env, cfg config) (string, time.Duration, error) {
	ping, err := pingP50(ctx, e, groundPings)
	if err != nil {
		return "", 0, err
	}
	var where string
	switch {
	case cfg.cluster > 0 && cfg.latency > 0:
		where = fmt.Sprintf("a Redis Cluster of %d masters (no replicas) on loopback, each through a faultproxy, %v each way", cfg.cluster, cfg.latency)
	case cfg.cluster > 0:
		where = fmt.Sprintf("a Redis Cluster of %d masters (no replicas) on loopback", cfg.cluster)
	case cfg.latency > 0:
		where = fmt.Sprintf("through faultproxy, %v each way", cfg.latency)
	case e.own:
		where = "loopback"
	default:
		where = "direct to -addr"
	}
	return fmt.Sprintf("%s; PING p50 %s", where, fmtDur(ping)), ping, nil
}
