package main

import (
	"context"
	"errors"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// env is what every scenario runs against.
type env struct {
	addr  string        // what every single-node client dials: the server, or the -latency proxy before it
	own   bool          // the tool started the server (or the cluster)
	admin *redis.Client // for INFO, CLIENT LIST, PING; no counting hook; on a cluster, the first master's

	// servers are the server's address, or with -cluster the masters'
	// (as the cluster announces them: what its clients are redirected to).
	servers []string
	cluster bool
	ground  *ground
	// nodes are an admin client of each of servers (nodes[0] is admin): a
	// parallel run sums their CPU time, commandstats, reads and keys.
	nodes []*redis.Client
	stop  func() error // stops what the tool started
}

// startEnv starts the server (a redis-server, or with -cluster N a Redis
// Cluster of N masters without replicas, both with internal/redistest, the
// test harness) unless -addr names one, and the -latency proxies before
// each.
func startEnv(cfg config) (*env, error) {
	e := &env{servers: []string{cfg.addr}, stop: func() error { return nil }}
	switch {
	case cfg.cluster > 0:
		c, err := redistest.LaunchCluster(cfg.cluster, 0)
		if errors.Is(err, redistest.ErrNotFound) {
			return nil, errNoServer
		}
		if err != nil {
			return nil, err
		}
		e.servers, e.own, e.cluster, e.stop = nil, true, true, c.Close
		for _, m := range c.Masters {
			e.servers = append(e.servers, m.Addr())
		}
	case cfg.addr == "":
		srv, err := redistest.Launch(redistest.Config{})
		if errors.Is(err, redistest.ErrNotFound) {
			return nil, errNoServer
		}
		if err != nil {
			return nil, err
		}
		e.servers, e.own, e.stop = []string{srv.Addr()}, true, srv.Close
	}
	g, err := startGround(e.servers, cfg.latency)
	if err != nil {
		return nil, errors.Join(err, e.stop())
	}
	e.ground, e.addr = g, g.addr(e.servers[0])
	for _, s := range e.servers {
		e.nodes = append(e.nodes, redis.NewClient(&redis.Options{Addr: g.addr(s), ClientName: "rlock-bench-admin"}))
	}
	e.admin = e.nodes[0]
	return e, nil
}

// close closes the admin clients, the proxies and what the tool started.
func (e *env) close() error {
	var errs []error
	for _, n := range e.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(append(errs, e.ground.close(), e.stop())...)
}

// newRedis returns a new go-redis client of the server (the first master
// of a cluster) named name (CLIENT SETNAME, so CLIENT LIST can tell the
// clients apart), with hooks added. Its options are go-redis' defaults
// otherwise, as users build their clients.
func (e *env) newRedis(name string, hooks ...redis.Hook) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:       e.addr,
		ClientName: name,
	})
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	return rdb
}

// newClient is newRedis on one server, and on a cluster a
// redis.ClusterClient seeded with the masters' addresses, its Dialer
// reaching each through its -latency proxy: go-redis' defaults otherwise
// (ContextTimeoutEnabled false), as users build their clients.
func (e *env) newClient(name string, hooks ...redis.Hook) redis.UniversalClient {
	if !e.cluster {
		return e.newRedis(name, hooks...)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:      e.servers,
		ClientName: name,
		Dialer:     e.ground.dialer(),
	})
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	return rdb
}

// sumNodes is f's figure summed over every node of e.
func sumNodes[T time.Duration | int64](ctx context.Context, e *env, f func(context.Context, *redis.Client) (T, error)) (T, error) {
	var sum T
	for _, n := range e.nodes {
		v, err := f(ctx, n)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// dbSize is DBSIZE: the keys of one node.
func dbSize(ctx context.Context, n *redis.Client) (int64, error) { return n.DBSize(ctx).Result() }
