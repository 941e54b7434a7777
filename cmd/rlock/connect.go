package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// connFlags are the connection flags.
type connFlags struct {
	addr     string
	url      string
	cluster  bool
	sentinel string
	user     string
	password string
	tls      bool
	timeout  time.Duration
	given    bool // a connection flag other than -timeout was given
	addrSet  bool
}

// register adds the connection flags to fs.
func (f *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "localhost:6379", "host:port (comma-separated with -cluster or -sentinel)")
	fs.StringVar(&f.url, "url", "", "redis:// or rediss:// URL")
	fs.BoolVar(&f.cluster, "cluster", false, "the addresses are a Redis Cluster's")
	fs.StringVar(&f.sentinel, "sentinel", "", "master name, with -addr the sentinels")
	fs.StringVar(&f.user, "user", "", "ACL user")
	fs.StringVar(&f.password, "password", "", "password (default $REDIS_PASSWORD)")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on each request")
}

// visited records which flags were given, after parsing.
func (f *connFlags) visited(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "json", "timeout":
		case "addr":
			f.addrSet, f.given = true, true
		default:
			f.given = true
		}
	})
}

// where names the server for error messages.
func (f *connFlags) where() string {
	if f.url != "" {
		return redactURL(f.url)
	}
	return f.addr
}

// connect builds the go-redis client the flags describe and checks, with a
// PING, that the server answers and accepts the credentials.
func (c *cli) connect(ctx context.Context) (redis.UniversalClient, error) {
	f := &c.conn
	if !f.given {
		if u := os.Getenv("REDIS_URL"); u != "" {
			f.url = u
		}
	}
	if f.password == "" {
		f.password = os.Getenv("REDIS_PASSWORD")
	}
	if f.timeout <= 0 {
		return nil, usageError{fmt.Sprintf("-timeout %v: must be positive", f.timeout)}
	}
	rdb, err := f.client()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return rdb, nil
}

// client builds the go-redis client: single node, cluster or Sentinel.
func (f *connFlags) client() (redis.UniversalClient, error) {
	switch {
	case f.url != "" && f.addrSet:
		return nil, usageError{"give -addr or -url, not both"}
	case f.url != "" && f.sentinel != "":
		return nil, usageError{"-sentinel takes the sentinels' -addr, not -url"}
	case f.cluster && f.sentinel != "":
		return nil, usageError{"give -cluster or -sentinel, not both"}
	case f.sentinel != "":
		o := &redis.FailoverOptions{MasterName: f.sentinel, SentinelAddrs: splitAddrs(f.addr)}
		o.Username, o.Password, o.TLSConfig = f.user, f.password, f.tlsConfig("")
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(o), nil
	case f.cluster:
		return f.clusterClient()
	}
	o := &redis.Options{Addr: f.addr}
	if f.url != "" {
		var err error
		if o, err = redis.ParseURL(f.url); err != nil {
			return nil, usageError{fmt.Sprintf("-url %s: %v", redactURL(f.url), err)}
		}
	}
	f.fill(&o.Username, &o.Password)
	if o.TLSConfig == nil {
		o.TLSConfig = f.tlsConfig(o.Addr)
	}
	o.ContextTimeoutEnabled = true
	return redis.NewClient(o), nil
}

// clusterClient builds a cluster client seeded with -addr or -url.
func (f *connFlags) clusterClient() (redis.UniversalClient, error) {
	o := &redis.ClusterOptions{Addrs: splitAddrs(f.addr)}
	if f.url != "" {
		var err error
		if o, err = redis.ParseClusterURL(f.url); err != nil {
			return nil, usageError{fmt.Sprintf("-url %s: %v", redactURL(f.url), err)}
		}
	}
	f.fill(&o.Username, &o.Password)
	if o.TLSConfig == nil {
		o.TLSConfig = f.tlsConfig("")
	}
	o.ContextTimeoutEnabled = true
	return redis.NewClusterClient(o), nil
}

// fill sets the user and password from the flags, unless a URL gave them.
func (f *connFlags) fill(user, password *string) {
	if f.user != "" {
		*user = f.user
	}
	if f.password != "" && *password == "" {
		*password = f.password
	}
}

// tlsConfig is the TLS configuration of -tls; nil without it.
func (f *connFlags) tlsConfig(addr string) *tls.Config {
	if !f.tls {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = ""
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
}

// splitAddrs splits a comma-separated address list.
func splitAddrs(s string) []string {
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// masters returns the nodes to scan: every master of a cluster, else the
// one server.
func masters(ctx context.Context, rdb redis.UniversalClient) ([]redis.UniversalClient, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return []redis.UniversalClient{rdb}, nil
	}
	var mu sync.Mutex // ForEachMaster calls fn concurrently
	var nodes []*redis.Client
	err := cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		out[i] = n
	}
	return out, nil
}
