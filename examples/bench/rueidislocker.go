package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidisLocker is a rueidislock Locker on a rueidis client of its own,
// configured as rueidislock's README says for a single Redis: KeyMajority
// 1 (one key per lock instead of a majority of three) and NoLoopTracking
// (Redis ≥ 7.0.5). The client's options are rueidis' defaults but for the
// address (a cluster's seed addresses: rueidis finds the cluster itself) and
// the dialer (rueidisOption). A waiter retries when client-side caching reports the key
// changed; the hold ends with the CancelFunc WithContext returned, which
// deletes the key before it returns.
type rueidisLocker struct {
	l    rueidislock.Locker
	name string
}

func newRueidisLocker(opt rueidis.ClientOption, name string, counter *cmdCounter) (*rueidisLocker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt,
		KeyMajority:    1,
		NoLoopTracking: true,
		ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(opt)
			if err != nil || counter == nil {
				return c, err
			}
			return countingRueidis{Client: c, counter: counter}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &rueidisLocker{l: l, name: name}, nil
}

// rueidisOption is the rueidis client option that reaches what rdb
// reaches: its server, or a cluster client's seed addresses and its Dialer
// (through the -latency proxies), the rest rueidis' defaults.
func rueidisOption(rdb redis.UniversalClient) rueidis.ClientOption {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rueidis.ClientOption{InitAddress: []string{rdb.(*redis.Client).Options().Addr}}
	}
	o := cc.Options()
	opt := rueidis.ClientOption{InitAddress: o.Addrs}
	if dial := o.Dialer; dial != nil {
		opt.DialCtxFn = func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, "tcp", dst)
		}
	}
	return opt
}

type rueidisCancelKey struct{}

func (r *rueidisLocker) lock(ctx context.Context) (context.Context, error) {
	hctx, cancel, err := r.l.WithContext(ctx, r.name)
	if err != nil {
		if ctx.Err() != nil {
			return ctx, ctx.Err()
		}
		return ctx, fmt.Errorf("rueidislock: %w", err)
	}
	return context.WithValue(hctx, rueidisCancelKey{}, cancel), nil
}

// errRueidisNoHold is unlock's error for a context lock did not return.
var errRueidisNoHold = errors.New("rueidislock: no lock in the hold context")

func (r *rueidisLocker) unlock(hctx context.Context) error {
	cancel, _ := hctx.Value(rueidisCancelKey{}).(context.CancelFunc)
	if cancel == nil {
		return errRueidisNoHold
	}
	cancel()
	return nil
}

func (r *rueidisLocker) close() error {
	r.l.Close()
	return nil
}

// countingRueidis counts the commands a rueidis client sends in a
// cmdCounter, by lower-case name as go-redis names them; rueidis has no
// hooks of its own in its main module. Connection set-up (HELLO, CLIENT
// TRACKING) does not pass through Do and is not counted.
type countingRueidis struct {
	rueidis.Client
	counter *cmdCounter
}

func (c countingRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd.Commands())
	return c.Client.Do(ctx, cmd)
}

func (c countingRueidis) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	for i := range multi {
		c.count(multi[i].Commands())
	}
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingRueidis) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.count(cmd.Commands())
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingRueidis) count(args []string) {
	if len(args) > 0 {
		c.counter.add(strings.ToLower(args[0]))
	}
}
