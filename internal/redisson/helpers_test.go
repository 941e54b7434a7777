package redisson

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// process is one Redisson process of a test: its Client on a go-redis
// client with default options, and a count of the acquire scripts it ran.
type process struct {
	*Client
	rdb      *redis.Client
	acquires *acquireCounter
}

func newProcess(t *testing.T, srv *redistest.Server) process {
	t.Helper()
	return newProcessCounting(t, srv, acquireScriptSource)
}

// newProcessCounting is newProcess counting the runs of the script src,
// its Client made with opts.
func newProcessCounting(t *testing.T, srv *redistest.Server, src string, opts ...Option) process {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	counter := &acquireCounter{src: src, hash: redis.NewScript(src).Hash()}
	rdb.AddHook(counter)
	c := NewClient(rdb, opts...)
	t.Cleanup(func() {
		_ = c.Close()
		_ = rdb.Close()
	})
	return process{Client: c, rdb: rdb, acquires: counter}
}

// threads is how many of the process's threads share name's subscription.
func (c *Client) threads(name string) int { return c.threadsOn(Channel(name)) }

// threadsOn is how many of the process's threads share channel's
// subscription.
func (c *Client) threadsOn(channel string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[channel]; ok {
		return e.threads
	}
	return 0
}

// acquireCounter is a go-redis hook counting the acquire scripts (src) a
// client ran, once each whether it took EVALSHA or NOSCRIPT and EVAL.
type acquireCounter struct {
	src, hash string
	n         atomic.Int64
}

func (h *acquireCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		isAcquire := len(args) > 1 &&
			((args[0] == "evalsha" && args[1] == h.hash) || args[0] == "eval" && args[1] == h.src)
		if isAcquire && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			h.n.Add(1)
		}
		return err
	}
}

func (h *acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// count is the number of acquire scripts run so far.
func (h *acquireCounter) count() int64 { return h.n.Load() }
