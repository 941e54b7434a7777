package redisson

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notByTTL bounds a wait that a "0" ends: far below the 30 s lease that a
// waiter woken only by the TTL would wait.
const notByTTL = 10 * time.Second

// lockAsync runs Lock on its own goroutine and sends the thread id once it
// returns (or the error).
func lockAsync(ctx context.Context, l *Lock, threadID int64) <-chan any {
	got := make(chan any, 1)
	go func() {
		if err := l.Lock(ctx, threadID, 0); err != nil {
			got <- err
			return
		}
		got <- threadID
	}()
	return got
}

func TestTwoProcessesExcludeEachOther(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	la, lb := a.GetLock("orders"), b.GetLock("orders")

	require.NoError(t, la.Lock(ctx, 1, 0))
	ok, err := lb.TryLock(ctx, 1, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "another process's thread 1 is another owner")
	held, err := srv.Client().HGetAll(ctx, "orders").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{a.ID() + ":1": "1"}, held, "the hash field is <uuid>:<threadId>")

	got := lockAsync(ctx, lb, 1)
	testsupport.Eventually(t, 5*time.Second, "b's thread subscribed", func() bool { return b.threads("orders") == 1 })
	require.NoError(t, la.Unlock(ctx, 1))
	assert.Equal(t, int64(1), testsupport.Recv(t, got, notByTTL, "b woken by a's unlock"))
	held, err = srv.Client().HGetAll(ctx, "orders").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{b.ID() + ":1": "1"}, held)
	require.NoError(t, lb.Unlock(ctx, 1))
	testsupport.Eventually(t, 5*time.Second, "b unsubscribed once its thread held the lock", func() bool {
		n, err := srv.Client().PubSubNumSub(ctx, Channel("orders")).Result()
		return err == nil && n[Channel("orders")] == 0 && b.threads("orders") == 0
	})
}

// Two threads of one process wait; each "0" wakes one of them, which tries
// once. A wake-up of both would show as an extra, failed acquire.
func TestOneUnlockMessageWakesOneThreadOfAProcess(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	la, lb := a.GetLock("jobs"), b.GetLock("jobs")
	require.NoError(t, la.Lock(ctx, 1, 0)) // 30 s lease: only a "0" ends the waits early

	got := make(chan any, 2)
	for _, id := range []int64{1, 2} {
		go func() { got <- <-lockAsync(ctx, lb, id) }()
	}
	// Each thread tried, subscribed and tried again: both wait on the latch
	// (or are about to, and then find the permit a "0" leaves).
	testsupport.Eventually(t, 5*time.Second, "both threads waiting", func() bool {
		return b.threads("jobs") == 2 && b.acquires.count() == 4
	})
	n, err := srv.Client().PubSubNumSub(ctx, Channel("jobs")).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n[Channel("jobs")], "the threads share one subscription")

	require.NoError(t, la.Unlock(ctx, 1))
	first, ok := testsupport.Recv(t, got, notByTTL, "one thread woken by a's unlock").(int64)
	require.True(t, ok, "Lock failed")
	require.NoError(t, lb.Unlock(ctx, first))
	second, ok := testsupport.Recv(t, got, notByTTL, "the other thread woken by the first's unlock").(int64)
	require.True(t, ok, "Lock failed")
	assert.NotEqual(t, first, second)
	assert.Equal(t, int64(6), b.acquires.count(),
		"4 while waiting, then one per wake-up: each \"0\" woke one thread")
	require.NoError(t, lb.Unlock(ctx, second))
}

func TestReentryCountsLevels(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	la := a.GetLock("report")
	sub := srv.Client().Subscribe(ctx, Channel("report"))
	defer sub.Close()
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	require.NoError(t, la.Lock(ctx, 7, 0))
	ok, err := la.TryLock(ctx, 7, time.Second, 0)
	require.NoError(t, err)
	require.True(t, ok, "the holding thread re-enters at once")
	count := func() string { return srv.Client().HGet(ctx, "report", a.ID()+":7").Val() }
	assert.Equal(t, "2", count())

	ok, err = a.GetLock("report").TryLock(ctx, 8, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "another thread of the same process is excluded")
	ok, err = b.GetLock("report").TryLock(ctx, 7, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "another process is excluded")
	assert.ErrorIs(t, la.Unlock(ctx, 8), ErrNotHeld)

	require.NoError(t, la.Unlock(ctx, 7))
	assert.Equal(t, "1", count(), "one unlock leaves one level")
	require.NoError(t, la.Unlock(ctx, 7))
	exists, err := srv.Client().Exists(ctx, "report").Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "the last unlock deletes the lock")
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0", msg.Payload, "only the last unlock publishes")
	assert.ErrorIs(t, la.Unlock(ctx, 7), ErrNotHeld)
	latches, err := srv.Client().Keys(ctx, "redisson_unlock_latch:*").Result()
	require.NoError(t, err)
	assert.Empty(t, latches, "each unlock deletes its latch, as Redisson does")
}

// A holder that never unlocks: the waiter sleeps on the holder's TTL and
// takes the lock when it runs out, with no "0" and no polling.
func TestWaiterWakesWhenTheHolderTTLRunsOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	require.NoError(t, a.GetLock("crashed").Lock(ctx, 1, 300*time.Millisecond))

	start := time.Now()
	pttl, err := srv.Client().PTTL(ctx, "crashed").Result()
	require.NoError(t, err)
	require.Greater(t, pttl, time.Duration(0))
	require.NoError(t, b.GetLock("crashed").Lock(ctx, 1, 0))
	waited := time.Since(start)

	assert.GreaterOrEqual(t, waited, pttl-2*time.Millisecond, "taken only once the key expired")
	// A try, a try after subscribing, one after sleeping the TTL, and a few
	// more of a millisecond each if the sleep ended just before the server
	// saw the key expire (its clock is read once per event-loop turn: seven
	// tries were seen on a loaded 2-core machine). Polling would take
	// hundreds over the 300 ms.
	assert.LessOrEqual(t, b.acquires.count(), int64(12), "the waiter slept on the TTL")
	held, err := srv.Client().HGetAll(ctx, "crashed").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{b.ID() + ":1": "1"}, held)
}

func TestTryLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	la, lb := a.GetLock("batch"), b.GetLock("batch")
	require.NoError(t, la.Lock(ctx, 1, 0))

	t.Run("gives up after the wait time", func(t *testing.T) {
		start := time.Now()
		ok, err := lb.TryLock(ctx, 1, 200*time.Millisecond, 0)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
		assert.Zero(t, b.threads("batch"), "unsubscribed on the way out")
	})
	t.Run("returns ctx's error when ctx ends first", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		ok, err := lb.TryLock(cctx, 1, time.Minute, 0)
		assert.False(t, ok)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("takes the lock on the holder's unlock", func(t *testing.T) {
		got := make(chan error, 1)
		go func() {
			ok, err := lb.TryLock(ctx, 1, time.Minute, 5*time.Second)
			if err == nil && !ok {
				err = assert.AnError
			}
			got <- err
		}()
		testsupport.Eventually(t, 5*time.Second, "b subscribed", func() bool { return b.threads("batch") == 1 })
		require.NoError(t, la.Unlock(ctx, 1))
		require.NoError(t, testsupport.Recv(t, got, notByTTL, "b woken by a's unlock"))
		pttl, err := srv.Client().PTTL(ctx, "batch").Result()
		require.NoError(t, err)
		assert.LessOrEqual(t, pttl, 5*time.Second, "the lease given")
		require.NoError(t, lb.Unlock(ctx, 1))
	})
}

func TestLockAfterCloseFailsToWait(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	require.NoError(t, a.GetLock("shut").Lock(ctx, 1, 0))
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.GetLock("shut").Lock(ctx, 1, 0), ErrClosed)
}
