package faultproxy_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setup starts a redis-server and a proxy in front of it; both are closed at
// the end of the test.
func setup(t *testing.T) (*redistest.Server, *faultproxy.Proxy) {
	t.Helper()
	srv := redistest.Start(t)
	p, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return srv, p
}

// client returns a go-redis client that connects through p, closed at the
// end of the test.
func client(t *testing.T, p *faultproxy.Proxy, mod func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true}
	if mod != nil {
		mod(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestForwardsCommandsAndReplies(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	for _, proto := range []int{2, 3} {
		c := client(t, p, func(o *redis.Options) { o.Protocol = proto })
		require.NoError(t, c.Set(ctx, "k", strings.Repeat("v", 200_000), 0).Err())
		v, err := c.Get(ctx, "k").Result()
		require.NoError(t, err)
		assert.Len(t, v, 200_000, "RESP%d", proto)
		cmds, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
			pl.HSet(ctx, "h", "a", 1, "b", 2)
			pl.HGetAll(ctx, "h")
			pl.Get(ctx, "missing")
			return nil
		})
		require.ErrorIs(t, err, redis.Nil)
		assert.Equal(t, map[string]string{"a": "1", "b": "2"}, cmds[1].(*redis.MapStringStringCmd).Val(), "RESP%d", proto)
	}
	s := p.Stats()
	assert.GreaterOrEqual(t, s.Conns, int64(2))
	assert.GreaterOrEqual(t, s.Commands, int64(10))
	assert.Equal(t, s.Commands, s.Replies, "one reply per command")
	assert.Equal(t, 4, p.Count("GET"), "two GETs in each protocol")
	assert.Zero(t, s.Dropped)
}

func TestBlackholeRunsCommandsButLosesReplies(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := client(t, p, func(o *redis.Options) { o.MaxRetries = -1 })
	require.NoError(t, c.Ping(ctx).Err())
	p.SetBlackhole(true)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := c.Set(short, "k", "v", 0).Err()
	cancel()
	assert.True(t, testsupport.IsTimeout(err), "the reply never comes: %v", err)
	v, err := srv.Client().Get(ctx, "k").Result()
	require.NoError(t, err, "the command ran on the server")
	assert.Equal(t, "v", v)
	assert.Positive(t, p.Stats().Dropped)
	p.SetBlackhole(false)
	require.NoError(t, c.Ping(ctx).Err(), "replies flow again")
}

func TestOnceDropsExactlyOneReply(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := client(t, p, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.MaxRetries = 2
	})
	require.NoError(t, c.Ping(ctx).Err())
	p.SetRule(faultproxy.Once(func(cmd faultproxy.Command) bool { return cmd.Name == "incr" }, faultproxy.Drop))
	n, err := c.Incr(ctx, "n").Result()
	require.NoError(t, err, "go-redis re-sends after the read timeout")
	assert.Equal(t, int64(2), n, "INCR is not idempotent: the re-send ran it again")
	assert.Equal(t, 2, p.Count("incr"))
	got, err := srv.Client().Get(ctx, "n").Int()
	require.NoError(t, err)
	assert.Equal(t, 2, got)
	assert.Equal(t, int64(1), p.Stats().Dropped)
}

func TestResetMidReply(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := client(t, p, func(o *redis.Options) { o.MaxRetries = -1 })
	big := strings.Repeat("x", 100_000)
	require.NoError(t, c.Set(ctx, "big", big, 0).Err())
	p.SetRule(faultproxy.Once(func(cmd faultproxy.Command) bool { return cmd.Name == "get" }, faultproxy.ResetMidReply))
	_, err := c.Get(ctx, "big").Result()
	require.Error(t, err, "the reply was cut")
	assert.NotErrorIs(t, err, redis.Nil)
	assert.Equal(t, int64(1), p.Stats().Resets)
	v, err := c.Get(ctx, "big").Result()
	require.NoError(t, err, "a new connection works")
	assert.Equal(t, big, v)
}

func TestResetConnectionsAndPubSub(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := client(t, p, nil)
	ps := c.Subscribe(ctx, "ch")
	defer ps.Close()
	_, err := ps.Receive(ctx) // the confirmation
	require.NoError(t, err)
	// Rules do not apply to a pub/sub connection.
	p.SetRule(func(faultproxy.Command) faultproxy.Action { return faultproxy.Drop })
	require.NoError(t, srv.Client().Publish(ctx, "ch", "one").Err())
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", msg.Payload)
	p.SetRule(nil)

	assert.Equal(t, 1, p.ResetConnections())
	// go-redis reconnects and subscribes again; publish until a message
	// arrives on the new connection.
	got := make(chan string, 1)
	go func() {
		defer close(got)
		for ctx.Err() == nil {
			// The first call returns the reset; go-redis reconnects.
			if m, err := ps.ReceiveMessage(ctx); err == nil {
				got <- m.Payload
				return
			}
		}
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case v, ok := <-got:
			require.True(t, ok, "no message after the reset")
			assert.Equal(t, "two", v)
			assert.Equal(t, 2, p.Count("subscribe"), "subscribed again")
			assert.Equal(t, int64(1), p.Stats().Resets)
			return
		case <-tick.C:
			require.NoError(t, srv.Client().Publish(ctx, "ch", "two").Err())
		case <-ctx.Done():
			t.Fatal("no message after the reset")
		}
	}
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold func(*faultproxy.Proxy) // keeps the next PING in flight
		// inFlight reports that the PING (or its reply) is on the wire.
		inFlight func(before, now faultproxy.Stats) bool
	}{
		{"with a reply in flight", func(p *faultproxy.Proxy) { p.SetLatency(time.Hour) },
			func(before, now faultproxy.Stats) bool { return now.Replies > before.Replies }},
		{"with a command in flight", func(p *faultproxy.Proxy) { p.SetRequestLatency(time.Hour) },
			func(before, now faultproxy.Stats) bool { return now.Commands > before.Commands }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			p, err := faultproxy.Start(srv.Addr())
			require.NoError(t, err)
			assert.Equal(t, srv.Addr(), p.Target())
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
			defer c.Close()
			ctx := testsupport.CtxFor(t, 10*time.Second)
			require.NoError(t, c.Ping(ctx).Err())
			tc.hold(p) // a value waiting must not keep Close waiting
			before := p.Stats()
			done := make(chan error, 1)
			go func() { done <- c.Ping(ctx).Err() }()
			testsupport.Eventually(t, 5*time.Second, "the PING in flight", func() bool { return tc.inFlight(before, p.Stats()) })
			require.NoError(t, p.Close())
			require.NoError(t, p.Close(), "twice is fine")
			assert.Error(t, testsupport.Recv(t, done, 5*time.Second, "the PING's end"))
			_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
			assert.Error(t, err, "no longer listening")
		})
	}
}

func TestTargetDown(t *testing.T) {
	t.Parallel()
	p, err := faultproxy.Start(testsupport.ClosedAddr(t))
	require.NoError(t, err)
	defer p.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer c.Close()
	assert.Error(t, c.Ping(testsupport.CtxFor(t, 5*time.Second)).Err(), "the proxy closes a connection it cannot forward")
}
