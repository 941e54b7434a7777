package redisson

import (
	"context"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noLease is Redisson's leaseTime -1: a permit only a release gives back.
const noLease = -1

// newSemProcess is a Redisson process whose acquires count the semaphore's
// acquire scripts.
func newSemProcess(t *testing.T, srv *redistest.Server) process {
	t.Helper()
	return newProcessCounting(t, srv, semAcquireScriptSource)
}

// semThreads is how many of the process's threads share the semaphore
// name's subscription.
func (c *Client) semThreads(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[SemaphoreChannel(name)]; ok {
		return e.threads
	}
	return 0
}

// acquireAsync runs Acquire without a lease on its own goroutine and sends
// its result to got, which has room for it.
func acquireAsync(ctx context.Context, s *Semaphore, got chan<- acquired) {
	go func() {
		id, err := s.Acquire(ctx, noLease)
		got <- acquired{id, err}
	}()
}

type acquired struct {
	id  string
	err error
}

// listen subscribes a plain client to channel and returns its messages.
func listen(t *testing.T, ctx context.Context, srv *redistest.Server, channel string) <-chan *redis.Message {
	t.Helper()
	sub := srv.Client().Subscribe(ctx, channel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	return sub.Channel()
}

func TestSemaphoreNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, timeout, channel string }{
		{"sem", "{sem}:timeout", "redisson_sc:{sem}"},
		{"{tenant}sem", "{tenant}sem:timeout", "redisson_sc:{tenant}sem"},
	} {
		assert.Equal(t, tc.timeout, SemaphoreTimeoutKey(tc.name), "suffixName of %s", tc.name)
		assert.Equal(t, tc.channel, SemaphoreChannel(tc.name), "prefixName of %s", tc.name)
		assert.Equal(t, redistest.Slot(tc.name), redistest.Slot(tc.timeout), "one slot")
		assert.Equal(t, redistest.Slot(tc.name), redistest.Slot(tc.channel), "one slot")
	}
}

func TestTrySetPermitsSetsOnceAndPublishes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newSemProcess(t, srv)
	msgs := listen(t, ctx, srv, SemaphoreChannel("pool"))
	s := a.GetPermitExpirableSemaphore("pool")

	ok, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "3", testsupport.Recv(t, msgs, notByTTL, "the count published").Payload)
	ok, err = s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	assert.False(t, ok, "set only once")
	n, err := s.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, "3", srv.Client().Get(ctx, "pool").Val(), "the counter is a plain string key")
}

func TestSemaphoreWireFormat(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	s := newSemProcess(t, srv).GetPermitExpirableSemaphore("wire")
	_, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)

	before := time.Now().UnixMilli()
	leased, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	after := time.Now().UnixMilli()
	forever, err := s.Acquire(ctx, noLease)
	require.NoError(t, err)

	assert.Len(t, leased, 32, "16 bytes, in hex")
	raw, err := hex.DecodeString(leased)
	require.NoError(t, err)
	score, err := srv.Client().ZScore(ctx, "{wire}:timeout", string(raw)).Result()
	require.NoError(t, err, "the member is the id's 16 raw bytes")
	assert.GreaterOrEqual(t, int64(score), before+time.Minute.Milliseconds(), "now + lease, client's clock")
	assert.LessOrEqual(t, int64(score), after+time.Minute.Milliseconds())
	raw, _ = hex.DecodeString(forever)
	score, err = srv.Client().ZScore(ctx, "{wire}:timeout", string(raw)).Result()
	require.NoError(t, err)
	assert.Equal(t, float64(NoLeaseScore), score)
	assert.Equal(t, "0", srv.Client().Get(ctx, "wire").Val())

	require.NoError(t, s.Release(ctx, leased))
	require.NoError(t, s.Release(ctx, forever))
	assert.ErrorIs(t, s.Release(ctx, forever), ErrPermitNotHeld, "released twice")
	assert.ErrorIs(t, s.Release(ctx, "00112233445566778899aabbccddeeff"), ErrPermitNotHeld)
	assert.Error(t, s.Release(ctx, "not hex"))
	assert.Equal(t, "2", srv.Client().Get(ctx, "wire").Val())
}

// Several processes, each with several threads, contend for 2 permits
// without leases: at most 2 hold at once, and every release wakes a waiter
// (a lost wake-up would leave a thread waiting forever, with no lease to
// wake it, and the test's context would end).
func TestSemaphoreLimitNeverExceeded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const permits, processes, threads, rounds = 2, 3, 4, 15
	var holders, most atomic.Int64
	var wg sync.WaitGroup
	for p := range processes {
		s := newSemProcess(t, srv).GetPermitExpirableSemaphore("limit")
		if p == 0 {
			ok, err := s.TrySetPermits(ctx, permits)
			require.NoError(t, err)
			require.True(t, ok)
		}
		for range threads {
			wg.Go(func() {
				for range rounds {
					id, err := s.Acquire(ctx, noLease)
					if !assert.NoError(t, err) {
						return
					}
					n := holders.Add(1)
					assert.LessOrEqual(t, n, int64(permits), "holders at once")
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond) // the work done under the permit
					holders.Add(-1)
					assert.NoError(t, s.Release(ctx, id))
				}
			})
		}
	}
	wg.Wait()
	t.Logf("at most %d holders at once", most.Load())
	n, err := newSemProcess(t, srv).GetPermitExpirableSemaphore("limit").AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, permits, n, "every permit given back")
	assert.Zero(t, srv.Client().ZCard(ctx, "{limit}:timeout").Val())
}

// Two threads of one process wait for the only permit. A release publishes
// the new count, 1, which releases min(threads, 1) = 1 latch permit: one
// thread wakes and tries once. A wake-up of both would show as an extra
// acquire script.
func TestSemaphoreReleaseWakesOneWaiterPerPermit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newSemProcess(t, srv), newSemProcess(t, srv)
	sa, sb := a.GetPermitExpirableSemaphore("jobs"), b.GetPermitExpirableSemaphore("jobs")
	msgs := listen(t, ctx, srv, SemaphoreChannel("jobs"))
	_, err := sa.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	held, err := sa.Acquire(ctx, noLease) // no lease: only a message ends the waits
	require.NoError(t, err)

	got := make(chan acquired, 2)
	acquireAsync(ctx, sb, got)
	acquireAsync(ctx, sb, got)
	// Each thread tried, subscribed and tried again: both wait on the latch
	// (or are about to, and then find the permit a message leaves).
	testsupport.Eventually(t, 5*time.Second, "both threads waiting", func() bool {
		return b.semThreads("jobs") == 2 && b.acquires.count() == 4
	})

	require.NoError(t, sa.Release(ctx, held))
	first := testsupport.Recv(t, got, notByTTL, "one thread woken by a's release")
	require.NoError(t, first.err)
	require.NoError(t, sb.Release(ctx, first.id))
	second := testsupport.Recv(t, got, notByTTL, "the other woken by the first's release")
	require.NoError(t, second.err)
	assert.NotEqual(t, first.id, second.id)
	assert.Equal(t, int64(6), b.acquires.count(), "4 while waiting, then one per wake-up")
	require.NoError(t, sb.Release(ctx, second.id))

	var payloads []string
	for range 4 {
		payloads = append(payloads, testsupport.Recv(t, msgs, notByTTL, "a message").Payload)
	}
	assert.Equal(t, []string{"1", "1", "1", "1"}, payloads,
		"trySetPermits publishes the permits, each release the count it leaves")
}

// A holder that never releases: the waiter sleeps until the permit's expiry
// score, then its own acquire script reclaims the permit and takes it — no
// message, no polling.
func TestSemaphoreExpiredPermitIsReclaimed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newSemProcess(t, srv), newSemProcess(t, srv)
	sa, sb := a.GetPermitExpirableSemaphore("crashed"), b.GetPermitExpirableSemaphore("crashed")
	_, err := sa.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	lost, err := sa.Acquire(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	raw, _ := hex.DecodeString(lost)
	expiry, err := srv.Client().ZScore(ctx, "{crashed}:timeout", string(raw)).Result()
	require.NoError(t, err)

	id, err := sb.Acquire(ctx, noLease)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Now().UnixMilli(), int64(expiry), "taken only once the lease ran out")
	// A try, a try after subscribing, one after sleeping until the expiry,
	// and at most two more if the sleep ended a millisecond early.
	assert.LessOrEqual(t, b.acquires.count(), int64(5), "the waiter slept until the expiry")
	members, err := srv.Client().ZRange(ctx, "{crashed}:timeout", 0, -1).Result()
	require.NoError(t, err)
	raw, _ = hex.DecodeString(id)
	assert.Equal(t, []string{string(raw)}, members, "the expired permit reclaimed, b's taken")
	assert.ErrorIs(t, sa.Release(ctx, lost), ErrPermitNotHeld)
}

// Redisson's release of a permit that expired but was not reclaimed yet
// answers false, yet gives it back and publishes the count.
func TestSemaphoreReleaseOfAnExpiredPermit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	s := newSemProcess(t, srv).GetPermitExpirableSemaphore("late")
	msgs := listen(t, ctx, srv, SemaphoreChannel("late"))
	_, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	testsupport.Recv(t, msgs, notByTTL, "trySetPermits' message")
	id, err := s.Acquire(ctx, 20*time.Millisecond)
	require.NoError(t, err)
	raw, _ := hex.DecodeString(id)
	expiry := int64(srv.Client().ZScore(ctx, "{late}:timeout", string(raw)).Val())
	testsupport.Eventually(t, 5*time.Second, "the lease ran out", func() bool {
		return time.Now().UnixMilli() > expiry
	})

	ok, err := s.TryRelease(ctx, id)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "1", testsupport.Recv(t, msgs, notByTTL, "the release's message").Payload)
	assert.Equal(t, "1", srv.Client().Get(ctx, "late").Val(), "given back all the same")
}

func TestSemaphoreTryAcquire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newSemProcess(t, srv), newSemProcess(t, srv)
	sa, sb := a.GetPermitExpirableSemaphore("batch"), b.GetPermitExpirableSemaphore("batch")
	_, err := sa.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	held, err := sa.Acquire(ctx, noLease)
	require.NoError(t, err)

	t.Run("gives up after the wait time", func(t *testing.T) {
		start := time.Now()
		_, ok, err := sb.TryAcquire(ctx, 200*time.Millisecond, noLease)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
		assert.Zero(t, b.semThreads("batch"), "unsubscribed on the way out")
	})
	t.Run("returns at once without a wait time", func(t *testing.T) {
		_, ok, err := sb.TryAcquire(ctx, 0, noLease)
		require.NoError(t, err)
		assert.False(t, ok)
	})
	t.Run("returns ctx's error when ctx ends first", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, ok, err := sb.TryAcquire(cctx, time.Minute, noLease)
		assert.False(t, ok)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("takes the permit on the holder's release", func(t *testing.T) {
		got := make(chan acquired, 1)
		go func() {
			id, ok, err := sb.TryAcquire(ctx, time.Minute, 5*time.Second)
			if err == nil && !ok {
				err = assert.AnError
			}
			got <- acquired{id, err}
		}()
		testsupport.Eventually(t, 5*time.Second, "b subscribed", func() bool { return b.semThreads("batch") == 1 })
		require.NoError(t, sa.Release(ctx, held))
		r := testsupport.Recv(t, got, notByTTL, "b woken by a's release")
		require.NoError(t, r.err)
		require.NoError(t, sb.Release(ctx, r.id))
	})
}

func TestSemaphoreAcquireWaitsForTrySetPermits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newSemProcess(t, srv), newSemProcess(t, srv)
	got := make(chan acquired, 1)
	acquireAsync(ctx, b.GetPermitExpirableSemaphore("unset"), got)
	testsupport.Eventually(t, 5*time.Second, "b waiting", func() bool {
		return b.semThreads("unset") == 1 && b.acquires.count() == 2
	})
	ok, err := a.GetPermitExpirableSemaphore("unset").TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	r := testsupport.Recv(t, got, notByTTL, "b woken by trySetPermits' message")
	require.NoError(t, r.err)
	assert.Len(t, r.id, 32)
}

// On a Redis 7 cluster with sharded pub/sub, a release SPUBLISHes and the
// waiter SSUBSCRIBEs: the hand-over works only if both do.
func TestSemaphoreShardedOnACluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	newSharded := func() (*Semaphore, *acquireCounter) {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Masters[0].Addr()}})
		counter := &acquireCounter{src: semAcquireScriptSource, hash: semAcquireScript.Hash()}
		rdb.AddHook(counter)
		c := NewShardedClient(rdb)
		t.Cleanup(func() {
			_ = c.Close()
			_ = rdb.Close()
		})
		return c.GetPermitExpirableSemaphore("shards"), counter
	}
	sa, _ := newSharded()
	sb, bAcquires := newSharded()
	_, err := sa.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	held, err := sa.Acquire(ctx, noLease)
	require.NoError(t, err)

	got := make(chan acquired, 1)
	acquireAsync(ctx, sb, got)
	testsupport.Eventually(t, 5*time.Second, "b waiting", func() bool {
		return sb.c.semThreads("shards") == 1 && bAcquires.count() == 2
	})
	require.NoError(t, sa.Release(ctx, held))
	r := testsupport.Recv(t, got, notByTTL, "b woken by a's SPUBLISH")
	require.NoError(t, r.err)
	require.NoError(t, sb.Release(ctx, r.id))
}

func TestSemaphoreMessageReleasesAtMostOnePermitPerThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		want    int
	}{
		{"2", 2}, {"3", 3}, {"7", 3}, {"0", 0}, {"-1", 0}, {"x", 0},
	} {
		t.Run("message "+tc.payload+" with 3 threads waiting", func(t *testing.T) {
			c := &Client{entries: map[string]*entry{}}
			e := newEntry(c.semaphoreMessage)
			e.threads = 3
			c.semaphoreMessage(e, tc.payload)
			assert.Equal(t, tc.want, e.latch.available(), "min(threads, message)")
		})
	}
}
