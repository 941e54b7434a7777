package lockmw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipelineCount counts the pipelines with a RESTORE (an acquisition's) that
// a go-redis client sends, the commands in every pipeline, and the context
// values the pipeline hook sees.
type pipelineCount struct {
	mu          sync.Mutex
	pipelines   int
	inPipelines int
	ctxValues   []any
}

type ctxMark struct{}

func (p *pipelineCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *pipelineCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (p *pipelineCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.mu.Lock()
		for _, c := range cmds {
			if c.Name() == "restore" { // the fast path's, not the Client's probe of it
				p.pipelines++
				break
			}
		}
		p.inPipelines += len(cmds)
		p.ctxValues = append(p.ctxValues, ctx.Value(ctxMark{}))
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestBatchingSharesPipelines: goroutines that lock and unlock names of
// their own at once share pipelines, each call answered with its own reply;
// the go-redis hooks see the pipelines with a caller's context values.
// WithoutBatching sends no pipeline.
func TestBatchingSharesPipelines(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, off := range []bool{false, true} {
		var count pipelineCount
		rdb := srv.NewClient()
		rdb.AddHook(&count)
		var opts []Option
		if off {
			opts = append(opts, WithoutBatching())
		}
		c := New(rdb, opts...)
		ctx := context.WithValue(testsupport.Ctx(t), ctxMark{}, "caller")
		warmUp(t, ctx, c)
		count.mu.Lock()
		count.pipelines = 0 // the Client's probe of RESTORE
		count.mu.Unlock()
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				m := c.Mutex(fmt.Sprintf("batch-%t-%d", off, g))
				for range 50 {
					h, err := m.Lock(ctx)
					if !assert.NoError(t, err) {
						return
					}
					assert.NoError(t, m.Unlock(h))
				}
			})
		}
		wg.Wait()
		require.NoError(t, c.Close())
		require.NoError(t, rdb.Close())
		n, err := srv.Client().Keys(ctx, fmt.Sprintf("batch-%t-*", off)).Result()
		require.NoError(t, err)
		assert.Empty(t, n, "every lock released")
		if off {
			assert.Zero(t, count.pipelines, "WithoutBatching: no pipeline")
			continue
		}
		t.Logf("%d commands in %d pipelines", count.inPipelines, count.pipelines)
		assert.Greater(t, count.pipelines, 0, "acquisitions batched")
		assert.Greater(t, count.inPipelines, count.pipelines, "pipelines carry several commands")
		for _, v := range count.ctxValues {
			assert.Equal(t, "caller", v, "the hook sees a caller's context values")
		}
	}
}

// hookedClient is a Client on a go-redis client of srv with hook added,
// closed when the test ends.
func hookedClient(t *testing.T, srv *redistest.Server, hook redis.Hook) *Client {
	rdb := srv.NewClient()
	rdb.AddHook(hook)
	c := New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// warmUp locks and unlocks a name on c: the Client's probe of RESTORE is
// done and the scripts are loaded.
func warmUp(t *testing.T, ctx context.Context, c *Client) {
	t.Helper()
	h, err := c.Mutex("warm").Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Mutex("warm").Unlock(h))
}

// waitFull waits until c's batcher has maxInFlight round trips under way:
// its next call is queued.
func waitFull(t *testing.T, c *Client) {
	testsupport.Eventually(t, 5*time.Second, "every round trip under way", func() bool {
		c.batch.mu.Lock()
		defer c.batch.mu.Unlock()
		// under: begun (a sender counts once it has taken the queue, not
		// while it gathers); the queue empty: nothing waits to join them.
		return len(c.batch.under) == maxInFlight && len(c.batch.queue) == 0
	})
}

// TestSecondRoundTripIsGathered: a call that finds a round trip of the
// batcher under way is not sent alone beside it: a sender goroutine takes
// it with whatever else is queued by then, in a pipeline, as the second
// round trip.
func TestSecondRoundTripIsGathered(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var count pipelineCount
	c := hookedClient(t, srv, &count)
	warmUp(t, ctx, c)
	count.mu.Lock()
	count.pipelines = 0
	count.mu.Unlock()
	require.NoError(t, srv.Pause())
	errs := make(chan error, maxInFlight)
	lock := func(name string) {
		_, err := c.Mutex(name).TryLock(ctx, 0, time.Minute)
		errs <- err
	}
	go lock("alone")
	testsupport.Eventually(t, 5*time.Second, "the first call under way", func() bool {
		c.batch.mu.Lock()
		defer c.batch.mu.Unlock()
		return c.batch.atOnce == 1
	})
	go lock("beside")
	waitFull(t, c)
	testsupport.Eventually(t, 5*time.Second, "the second call sent in a pipeline", func() bool {
		count.mu.Lock()
		defer count.mu.Unlock()
		return count.pipelines == 1
	})
	require.NoError(t, srv.Resume())
	for range maxInFlight {
		require.NoError(t, <-errs)
	}
	count.mu.Lock()
	defer count.mu.Unlock()
	assert.Equal(t, 1, count.pipelines, "the first call went alone, at once")
}

// TestBatchedCallReturnsAtItsDeadline: a call queued behind a round trip
// that does not return (a paused server) returns at its own deadline, and
// is never sent: when the server is back, its lock was not taken.
func TestBatchedCallReturnsAtItsDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := New(srv.NewClient(func(o *redis.Options) { o.ContextTimeoutEnabled = false }))
	defer c.Close()
	warmUp(t, ctx, c)
	require.NoError(t, srv.Pause())
	first := make(chan error, maxInFlight)
	for i := range maxInFlight {
		go func() {
			m := c.Mutex(fmt.Sprint("slow-", i))
			h, err := m.Lock(ctx)
			if err == nil {
				err = m.Unlock(h)
			}
			first <- err
		}()
	}
	waitFull(t, c)
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := c.Mutex("queued").Lock(qctx)
	took := time.Since(start)
	require.NoError(t, srv.Resume())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ErrNotAcquired)
	assert.Less(t, took, 2*time.Second, "returned at its deadline, not with the round trips ahead of it")
	for range maxInFlight {
		require.NoError(t, <-first)
	}
	n, err := srv.Client().Exists(ctx, "queued").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the queued call was never sent")
}

// TestBatchedCallGivenUpInFlight: a call whose pipeline is under way when
// its deadline comes returns then; the lock its RESTORE took after all is
// undone once the pipeline is back, long before the lock's TTL.
func TestBatchedCallGivenUpInFlight(t *testing.T) {
	t.Parallel()
	const latency = 400 * time.Millisecond
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	p, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	defer p.Close()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	c := New(rdb)
	defer c.Close()
	warmUp(t, ctx, c)
	p.SetLatency(latency)

	first := make(chan error, maxInFlight)
	for i := range maxInFlight {
		go func() {
			_, err := c.Mutex(fmt.Sprint("ahead-", i)).TryLock(ctx, 0, time.Minute)
			first <- err
		}()
	}
	waitFull(t, c)
	// Queued behind the aheads, sent when a reply is back (one latency), and
	// answered one latency later: the deadline comes in between.
	qctx, cancel := context.WithTimeout(ctx, latency+latency/2)
	defer cancel()
	start := time.Now()
	_, err = c.Mutex("inflight").TryLock(qctx, 0, time.Minute)
	took := time.Since(start)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "err = %v", err)
	assert.Less(t, took, 2*latency+latency/4+time.Second, "returned by its deadline")
	for range maxInFlight {
		require.NoError(t, <-first)
	}
	p.SetLatency(0)
	testsupport.Eventually(t, 10*time.Second, "the late RESTORE undone", func() bool {
		n, err := srv.Client().Exists(ctx, "inflight").Result()
		return err == nil && n == 0
	})
}

// TestBatcherCloseLeavesNothingRunning: Close waits for the goroutine that
// sends the queue; calls after Close still run (goleak checks the rest).
func TestBatcherCloseLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := New(srv.NewClient())
	type held struct {
		m *Mutex
		h context.Context
	}
	var wg sync.WaitGroup
	holds := make(chan held, 32)
	for g := range 32 {
		wg.Go(func() {
			m := c.Mutex(fmt.Sprintf("close-%d", g))
			if h, err := m.Lock(ctx); assert.NoError(t, err) {
				holds <- held{m, h}
			}
		})
	}
	wg.Wait()
	close(holds)
	require.NoError(t, c.Close())
	c.batch.mu.Lock()
	busy := len(c.batch.under) > 0
	c.batch.mu.Unlock()
	assert.False(t, busy, "nothing under way after Close")
	for x := range holds {
		assert.NoError(t, x.m.Unlock(x.h), "Unlock after Close still releases")
	}
}

// TestSettledWaitsForEveryEarlierRoundTrip: round trips under way at once
// may end in any order; an undo queued after round trip n waits until every
// round trip up to n has ended, not for as many ends as n, and is woken
// then.
func TestSettledWaitsForEveryEarlierRoundTrip(t *testing.T) {
	woken := 0
	b := &batcher{onEnd: func() { woken++ }}
	b.mu.Lock()
	first, second := b.beginLocked(), b.beginLocked()
	b.mu.Unlock()
	assert.False(t, b.settled(first))
	b.mu.Lock()
	b.endedLocked(second)
	b.mu.Unlock()
	assert.False(t, b.settled(first), "the second round trip ended; the first, which the undo waits for, has not")
	assert.Zero(t, woken)
	third := b.begun() + 1
	b.mu.Lock()
	b.beginLocked()
	b.endedLocked(first)
	b.mu.Unlock()
	assert.Equal(t, 1, woken, "woken once the first ended")
	assert.True(t, b.settled(second))
	assert.False(t, b.settled(third))
}
