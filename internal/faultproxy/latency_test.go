package faultproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The latencies of these tests are long enough that a value that skipped
// them is told apart on a loaded machine, and the upper bounds are loose:
// they tell a wire (delayed once) from a pause per value (delayed N times).

func TestLatencyDelaysEachDirection(t *testing.T) {
	t.Parallel()
	const up, down = 300 * time.Millisecond, 200 * time.Millisecond
	for _, tc := range []struct {
		name     string
		up, down time.Duration
	}{
		{"a request latency delays the command on its way to the server", up, 0},
		{"a reply latency delays the reply on its way back", 0, down},
		{"both add up to the round trip", up, down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t)
			ctx := testsupport.CtxFor(t, 10*time.Second)
			c := client(t, p, nil)
			require.NoError(t, c.Ping(ctx).Err()) // connected
			p.SetRequestLatency(tc.up)
			p.SetLatency(tc.down)

			// The server and this test share a clock: TIME is read when the
			// command arrives, in whole microseconds.
			sent := time.Now()
			at, err := c.Time(ctx).Result()
			got := time.Now()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, at.Sub(sent.Truncate(time.Microsecond)), tc.up, "the command reached the server late")
			assert.GreaterOrEqual(t, got.Sub(at), tc.down, "the reply reached the client late")

			start := time.Now()
			require.NoError(t, c.Ping(ctx).Err())
			assert.GreaterOrEqual(t, time.Since(start), tc.up+tc.down, "a PING round trip")

			p.SetRequestLatency(0)
			p.SetLatency(0)
			start = time.Now()
			require.NoError(t, c.Ping(ctx).Err())
			assert.Less(t, time.Since(start), min(up, down), "latency off")
		})
	}
}

// Short waits are timed by the clock (a timerfd on Linux, see
// clock_linux.go), not by Go timers: they too last at least the latency.
func TestShortLatencyIsKept(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Millisecond
	_, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	c := client(t, p, nil)
	require.NoError(t, c.Ping(ctx).Err())
	p.SetRequestLatency(d)
	p.SetLatency(d)
	for i := range 20 {
		start := time.Now()
		require.NoError(t, c.Ping(ctx).Err())
		require.GreaterOrEqual(t, time.Since(start), 2*d, "PING %d", i)
	}
}

func TestLatencyDelaysAPipelineOnceInOrder(t *testing.T) {
	t.Parallel()
	const d, n = 100 * time.Millisecond, 100
	_, p := setup(t)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	c := client(t, p, nil)
	require.NoError(t, c.Ping(ctx).Err())
	var mu sync.Mutex
	var paired []string // the argument of the command each reply was paired with
	p.SetRule(func(cmd faultproxy.Command) faultproxy.Action {
		if cmd.Name == "echo" {
			mu.Lock()
			paired = append(paired, cmd.Args[0])
			mu.Unlock()
		}
		return faultproxy.Forward
	})
	p.SetRequestLatency(d)
	p.SetLatency(d)

	want := make([]string, n)
	start := time.Now()
	cmds, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i := range n {
			want[i] = strconv.Itoa(i)
			pl.Echo(ctx, want[i])
		}
		return nil
	})
	took := time.Since(start)
	require.NoError(t, err)
	got := make([]string, n)
	for i, cmd := range cmds {
		got[i] = cmd.(*redis.StringCmd).Val()
	}
	assert.Equal(t, want, got, "every reply, in order")
	mu.Lock()
	assert.Equal(t, want, paired, "each reply paired with its command")
	mu.Unlock()
	assert.GreaterOrEqual(t, took, 2*d, "one round trip through the delay")
	assert.Less(t, took, 50*d, "delayed as a whole, not %d times", n)
}

func TestLatencyDelaysPubSub(t *testing.T) {
	t.Parallel()
	const d, n = 150 * time.Millisecond, 50
	srv, p := setup(t)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	c := client(t, p, nil)
	require.NoError(t, c.Ping(ctx).Err())
	p.SetRequestLatency(d)
	p.SetLatency(d)

	start := time.Now()
	ps := c.Subscribe(ctx, "ch")
	defer ps.Close()
	_, err := ps.Receive(ctx) // the confirmation
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 2*d, "SUBSCRIBE and its confirmation")

	pub := srv.Client()
	start = time.Now()
	receivers, err := pub.Publish(ctx, "ch", "first").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), receivers, "subscribed on the server")
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "first", msg.Payload)
	assert.GreaterOrEqual(t, time.Since(start), d, "the push is delayed like a reply")

	want := make([]string, n)
	_, err = pub.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i := range n {
			want[i] = strconv.Itoa(i)
			pl.Publish(ctx, "ch", want[i])
		}
		return nil
	})
	require.NoError(t, err)
	got := make([]string, n)
	for i := range n {
		msg, err := ps.ReceiveMessage(ctx)
		require.NoError(t, err)
		got[i] = msg.Payload
	}
	assert.Equal(t, want, got, "pushes in order")
}

// rawConn is a plain TCP connection to p that speaks RESP2 by hand, so that
// exactly the commands the test writes go through (no HELLO, no pool).
func rawConn(t *testing.T, p *faultproxy.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	return conn, bufio.NewReader(conn)
}

func writeCommand(t *testing.T, conn net.Conn, args ...string) {
	t.Helper()
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := conn.Write(b)
	require.NoError(t, err)
}

// readBulk reads one RESP2 bulk string reply.
func readBulk(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var n int
	_, err := fmt.Fscanf(r, "$%d\r\n", &n)
	require.NoError(t, err)
	b := make([]byte, n+2)
	_, err = io.ReadFull(r, b)
	require.NoError(t, err)
	return string(b[:n])
}

func TestLoweringTheLatencyKeepsOrder(t *testing.T) {
	t.Parallel()
	const d = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		set  func(*faultproxy.Proxy, time.Duration)
		// inFlight reports that the first command (or its reply) is on
		// the delayed wire.
		inFlight func(faultproxy.Stats) bool
	}{
		{"a command sent after waits for the one in flight", (*faultproxy.Proxy).SetRequestLatency,
			func(s faultproxy.Stats) bool { return s.Commands >= 1 }},
		{"a reply read after waits for the one in flight", (*faultproxy.Proxy).SetLatency,
			func(s faultproxy.Stats) bool { return s.Replies >= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t)
			conn, r := rawConn(t, p)
			tc.set(p, d)
			start := time.Now()
			writeCommand(t, conn, "ECHO", "slow")
			testsupport.Eventually(t, 5*time.Second, "the first value in flight", func() bool { return tc.inFlight(p.Stats()) })
			tc.set(p, 0)
			writeCommand(t, conn, "ECHO", "fast")
			assert.Equal(t, "slow", readBulk(t, r))
			assert.Equal(t, "fast", readBulk(t, r))
			assert.GreaterOrEqual(t, time.Since(start), d, "the second did not overtake the first")
		})
	}
}

func TestCommandsInFlightReachTheServerAfterTheClientHangsUp(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	conn, r := rawConn(t, p)
	writeCommand(t, conn, "CLIENT", "SETNAME", "proxied")
	ok, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", ok)
	p.SetRequestLatency(200 * time.Millisecond)
	writeCommand(t, conn, "SET", "k", "v")
	testsupport.Eventually(t, 5*time.Second, "the SET in flight", func() bool { return p.Stats().Commands == 2 })
	require.NoError(t, conn.Close())
	testsupport.Eventually(t, 5*time.Second, "the SET on the server", func() bool {
		v, err := srv.Client().Get(ctx, "k").Result()
		return err == nil && v == "v"
	})
	testsupport.Eventually(t, 5*time.Second, "the server's side closed", func() bool {
		list, err := srv.Client().ClientList(ctx).Result()
		return err == nil && !strings.Contains(list, "name=proxied ")
	})
}
