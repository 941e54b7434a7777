package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-rlock/rlock/lockmw/valkeyrlock"
	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"
)

// valkeyKind is rlock on valkey-go (lockmw/valkeyrlock), one valkey-go
// client with its default options under one lockmw.Client; valkeylockKind
// is valkey-go's own valkeylock (rueidislock's fork), configured as
// rueidislock is here (KeyMajority 1, NoLoopTracking): the same client
// underneath, only the lock differs. -lock names, not part of -lock all.
const (
	valkeyKind     = "rlock-valkey"
	valkeylockKind = "valkeylock"
)

// valkeyOption is rueidisOption for valkey-go.
func valkeyOption(rdb redis.UniversalClient) valkey.ClientOption {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return valkey.ClientOption{InitAddress: []string{rdb.(*redis.Client).Options().Addr}}
	}
	o := cc.Options()
	opt := valkey.ClientOption{InitAddress: o.Addrs}
	if dial := o.Dialer; dial != nil {
		opt.DialCtxFn = func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, "tcp", dst)
		}
	}
	return opt
}

// newValkeyLockers returns the lockers of names of kind (valkeyKind or
// valkeylockKind) on one valkey-go client, and the func that closes them.
func newValkeyLockers(kind string, rdb redis.UniversalClient, counter *cmdCounter, names []string) ([]locker, func() error, error) {
	build := func(opt valkey.ClientOption) (valkey.Client, error) {
		c, err := valkey.NewClient(opt)
		if err != nil || counter == nil {
			return c, err
		}
		return countingValkey{Client: c, counter: counter}, nil
	}
	ls := make([]locker, len(names))
	if kind == valkeylockKind {
		l, err := valkeylock.NewLocker(valkeylock.LockerOption{
			ClientOption: valkeyOption(rdb), KeyMajority: 1, NoLoopTracking: true, ClientBuilder: build,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("valkeylock: %w", err)
		}
		for i, n := range names {
			ls[i] = &valkeyLocker{l: l, name: n}
		}
		return ls, func() error { l.Close(); return nil }, nil
	}
	vc, err := build(valkeyOption(rdb))
	if err != nil {
		return nil, nil, fmt.Errorf("valkey-go: %w", err)
	}
	c := valkeyrlock.New(vc)
	for i, n := range names {
		ls[i] = &rlockLocker{c: c, m: c.Mutex(n)}
	}
	return ls, func() error {
		err := c.Close()
		vc.Close()
		return err
	}, nil
}

// valkeyLocker is a name of a valkeylock Locker (see rueidisLocker).
type valkeyLocker struct {
	l    valkeylock.Locker
	name string
}

type valkeyCancelKey struct{}

func (v *valkeyLocker) lock(ctx context.Context) (context.Context, error) {
	hctx, cancel, err := v.l.WithContext(ctx, v.name)
	if err != nil {
		if ctx.Err() != nil {
			return ctx, ctx.Err()
		}
		return ctx, fmt.Errorf("valkeylock: %w", err)
	}
	return context.WithValue(hctx, valkeyCancelKey{}, cancel), nil
}

func (v *valkeyLocker) unlock(hctx context.Context) error {
	cancel, _ := hctx.Value(valkeyCancelKey{}).(context.CancelFunc)
	if cancel == nil {
		return errRueidisNoHold
	}
	cancel()
	return nil
}

func (v *valkeyLocker) close() error {
	v.l.Close()
	return nil
}

// countingValkey is countingRueidis for valkey-go.
type countingValkey struct {
	valkey.Client
	counter *cmdCounter
}

func (c countingValkey) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	c.count(cmd.Commands())
	return c.Client.Do(ctx, cmd)
}

func (c countingValkey) DoMulti(ctx context.Context, multi ...valkey.Completed) []valkey.ValkeyResult {
	for i := range multi {
		c.count(multi[i].Commands())
	}
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingValkey) DoCache(ctx context.Context, cmd valkey.Cacheable, ttl time.Duration) valkey.ValkeyResult {
	c.count(cmd.Commands())
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingValkey) count(args []string) {
	if len(args) > 0 {
		c.counter.add(strings.ToLower(args[0]))
	}
}
