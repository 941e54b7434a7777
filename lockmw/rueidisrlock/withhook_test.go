package rueidisrlock_test

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// rueidishook (github.com/redis/rueidis/rueidishook) is a module of its
// own, which this project's builds cannot download; withHook is its
// WithHook, written from its source, for TestHookedClient. rueidisotel's
// client wraps the same methods the same way, each starting its span from
// the context of the call.

// hook is rueidishook.Hook: each method is given the client it wraps (a
// dedicated connection's, for the commands of Dedicated and Dedicate) and
// the call.
type hook interface {
	Do(client rueidis.Client, ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult
	DoMulti(client rueidis.Client, ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult
	DoCache(client rueidis.Client, ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult
	DoMultiCache(client rueidis.Client, ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult
	Receive(client rueidis.Client, ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error
	DoStream(client rueidis.Client, ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream
	DoMultiStream(client rueidis.Client, ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream
}

// withHook is rueidishook.WithHook(c, h): the calls of c go through h, and
// so do those of its dedicated connections (Dedicated, Dedicate) and of its
// node clients (Nodes). A dedicated connection's pub/sub hooks
// (SetPubSubHooks) are the connection's own: h sees no message.
func withHook(c rueidis.Client, h hook) rueidis.Client { return &hookedClient{c: c, h: h} }

type hookedClient struct {
	c rueidis.Client
	h hook
}

func (c *hookedClient) B() rueidis.Builder { return c.c.B() }

func (c *hookedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return c.h.Do(c.c, ctx, cmd)
}

func (c *hookedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	return c.h.DoMulti(c.c, ctx, multi...)
}

func (c *hookedClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	return c.h.DoCache(c.c, ctx, cmd, ttl)
}

func (c *hookedClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	return c.h.DoMultiCache(c.c, ctx, multi...)
}

func (c *hookedClient) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	return c.h.DoStream(c.c, ctx, cmd)
}

func (c *hookedClient) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	return c.h.DoMultiStream(c.c, ctx, multi...)
}

func (c *hookedClient) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	return c.h.Receive(c.c, ctx, subscribe, fn)
}

func (c *hookedClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.c.Dedicated(func(d rueidis.DedicatedClient) error { return fn(&hookedDedicated{d: d, h: c.h}) })
}

func (c *hookedClient) Dedicate() (rueidis.DedicatedClient, func()) {
	d, release := c.c.Dedicate()
	return &hookedDedicated{d: d, h: c.h}, release
}

func (c *hookedClient) Nodes() map[string]rueidis.Client {
	nodes := c.c.Nodes()
	for addr, n := range nodes {
		nodes[addr] = &hookedClient{c: n, h: c.h}
	}
	return nodes
}

func (c *hookedClient) Mode() rueidis.ClientMode { return c.c.Mode() }

func (c *hookedClient) Close() { c.c.Close() }

// hookedDedicated is a dedicated connection whose calls go through h.
type hookedDedicated struct {
	d rueidis.DedicatedClient
	h hook
}

func (d *hookedDedicated) B() rueidis.Builder { return d.d.B() }

func (d *hookedDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return d.h.Do(dedicatedAsClient{d: d.d}, ctx, cmd)
}

func (d *hookedDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	return d.h.DoMulti(dedicatedAsClient{d: d.d}, ctx, multi...)
}

func (d *hookedDedicated) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	return d.h.Receive(dedicatedAsClient{d: d.d}, ctx, subscribe, fn)
}

func (d *hookedDedicated) SetPubSubHooks(hooks rueidis.PubSubHooks) <-chan error {
	return d.d.SetPubSubHooks(hooks)
}

func (d *hookedDedicated) SetOnInvalidations(fn func([]rueidis.RedisMessage)) <-chan error {
	return d.d.SetOnInvalidations(fn)
}

func (d *hookedDedicated) Close() { d.d.Close() }

// dedicatedAsClient is a dedicated connection as the client a hook is
// given; the methods a dedicated connection lacks panic (Client is nil), as
// rueidishook's do.
type dedicatedAsClient struct {
	rueidis.Client
	d rueidis.DedicatedClient
}

func (c dedicatedAsClient) B() rueidis.Builder { return c.d.B() }

func (c dedicatedAsClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return c.d.Do(ctx, cmd)
}

func (c dedicatedAsClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	return c.d.DoMulti(ctx, multi...)
}

func (c dedicatedAsClient) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	return c.d.Receive(ctx, subscribe, fn)
}

func (c dedicatedAsClient) Close() { c.d.Close() }

var (
	_ rueidis.Client          = (*hookedClient)(nil)
	_ rueidis.DedicatedClient = (*hookedDedicated)(nil)
)

var _ hook = (*recorder)(nil)
