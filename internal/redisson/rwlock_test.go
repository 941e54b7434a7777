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

// rwThreads is how many of the process's threads share the read-write
// lock name's subscription.
func (c *Client) rwThreads(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[RWChannel(name)]; ok {
		return e.threads
	}
	return 0
}

// rwQueued is how many of the process's threads are blocked on the read-write
// lock name's latch (the queue a "1" releases).
func (c *Client) rwQueued(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[RWChannel(name)]; ok {
		return e.latch.queued.Load()
	}
	return 0
}

// async runs f on its own goroutine and sends its error.
func async(f func() error) <-chan error {
	got := make(chan error, 1)
	go func() { got <- f() }()
	return got
}

// hashOf is the read-write lock's hash, as a plain client reads it.
func hashOf(t *testing.T, ctx context.Context, srv *redistest.Server, name string) map[string]string {
	t.Helper()
	h, err := srv.Client().HGetAll(ctx, name).Result()
	require.NoError(t, err)
	return h
}

func pttl(t *testing.T, ctx context.Context, srv *redistest.Server, key string) time.Duration {
	t.Helper()
	d, err := srv.Client().PTTL(ctx, key).Result()
	require.NoError(t, err)
	return d
}

func TestReadWriteLockNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, channel, timeout, prefix, latch string }{
		{"cfg", "redisson_rwlock:{cfg}", "{cfg}:id:1:rwlock_timeout:2", "{cfg}", "redisson_unlock_latch:{cfg}:r"},
		{"{t}cfg", "redisson_rwlock:{t}cfg", "{t}cfg:id:1:rwlock_timeout:2", "{t}cfg", "redisson_unlock_latch:{t}cfg:r"},
	} {
		assert.Equal(t, tc.channel, RWChannel(tc.name))
		assert.Equal(t, tc.timeout, ReadTimeoutKey(tc.name, "id:1", 2))
		assert.Equal(t, tc.prefix, readKeyPrefix(readTimeoutPrefix(tc.name, "id:1"), "id:1"), "getKeyPrefix")
		assert.Equal(t, tc.latch, LatchKey(tc.name, "r"))
		for _, key := range []string{tc.channel, tc.timeout, tc.latch} {
			assert.Equal(t, redistest.Slot(tc.name), redistest.Slot(key), "%s shares %s's slot", key, tc.name)
		}
	}
}

func TestReadersShareAndAWriterExcludesEveryone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	ra := a.GetReadWriteLock("doc").ReadLock()
	rb := b.GetReadWriteLock("doc").ReadLock()
	wb := b.GetReadWriteLock("doc").WriteLock()

	require.NoError(t, ra.Lock(ctx, 1, 0))
	ok, err := rb.TryLock(ctx, 1, 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "a second process's reader shares at once")
	assert.Equal(t, map[string]string{"mode": "read", a.ID() + ":1": "1", b.ID() + ":1": "1"}, hashOf(t, ctx, srv, "doc"))
	for _, id := range []string{a.ID(), b.ID()} {
		assert.Greater(t, pttl(t, ctx, srv, ReadTimeoutKey("doc", id+":1", 1)), time.Duration(0), "each reader's level 1 has its timeout key")
	}

	ok, err = wb.TryLock(ctx, 2, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a writer is excluded by readers")
	wrote := async(func() error { return wb.Lock(ctx, 2, 0) })
	testsupport.Eventually(t, 5*time.Second, "the writer waits", func() bool { return b.rwQueued("doc") == 1 })
	require.NoError(t, ra.Unlock(ctx, 1))
	require.NoError(t, rb.Unlock(ctx, 1))
	require.NoError(t, testsupport.Recv(t, wrote, notByTTL, "the writer woken by the last reader's \"0\""))
	assert.Equal(t, map[string]string{"mode": "write", b.ID() + ":2:write": "1"}, hashOf(t, ctx, srv, "doc"))

	for _, try := range []attempter{ra, a.GetReadWriteLock("doc").WriteLock(), rb} {
		ok, _, err := try.tryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		assert.False(t, ok, "%T excluded by the writer", try)
	}
	read := async(func() error { return ra.Lock(ctx, 1, 0) })
	testsupport.Eventually(t, 5*time.Second, "the reader waits", func() bool { return a.rwQueued("doc") == 1 })
	require.NoError(t, wb.Unlock(ctx, 2))
	require.NoError(t, testsupport.Recv(t, read, notByTTL, "the reader woken by the writer's \"1\""))
	assert.Zero(t, a.rwThreads("doc")+b.rwThreads("doc"), "waiters unsubscribe once they hold it")
	require.NoError(t, ra.Unlock(ctx, 1))
	assert.Empty(t, hashOf(t, ctx, srv, "doc"))
}

func TestReadWriteReentry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcess(t, srv)
	rw := a.GetReadWriteLock("report")
	field := a.ID() + ":7"

	t.Run("a reader's levels each have a timeout key", func(t *testing.T) {
		r := rw.ReadLock()
		require.NoError(t, r.Lock(ctx, 7, 0))
		ok, err := r.TryLock(ctx, 7, 0, 0)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "2", hashOf(t, ctx, srv, "report")[field])
		assert.Greater(t, pttl(t, ctx, srv, ReadTimeoutKey("report", field, 2)), time.Duration(0))

		require.NoError(t, r.Unlock(ctx, 7))
		assert.Equal(t, "1", hashOf(t, ctx, srv, "report")[field])
		assert.Equal(t, time.Duration(-2), pttl(t, ctx, srv, ReadTimeoutKey("report", field, 2)), "the top level's key goes")
		assert.Greater(t, pttl(t, ctx, srv, ReadTimeoutKey("report", field, 1)), time.Duration(0))
		require.NoError(t, r.Unlock(ctx, 7))
		assert.Empty(t, hashOf(t, ctx, srv, "report"))
		assert.Equal(t, time.Duration(-2), pttl(t, ctx, srv, ReadTimeoutKey("report", field, 1)))
		assert.ErrorIs(t, r.Unlock(ctx, 7), ErrNotHeld)
	})
	t.Run("a writer's re-entry adds its lease to the TTL left", func(t *testing.T) {
		w := rw.WriteLock()
		require.NoError(t, w.Lock(ctx, 7, 10*time.Second))
		require.NoError(t, w.Lock(ctx, 7, 10*time.Second))
		assert.Equal(t, map[string]string{"mode": "write", field + ":write": "2"}, hashOf(t, ctx, srv, "report"))
		assert.Greater(t, pttl(t, ctx, srv, "report"), 10*time.Second)
		// Another thread, through another handle: a failed unlock resets the
		// handle's lease to the watchdog timeout, as Redisson's does.
		assert.ErrorIs(t, rw.WriteLock().Unlock(ctx, 8), ErrNotHeld, "another thread")

		require.NoError(t, w.Unlock(ctx, 7))
		assert.LessOrEqual(t, pttl(t, ctx, srv, "report"), 10*time.Second, "an unlock that leaves levels sets the handle's lease")
		require.NoError(t, w.Unlock(ctx, 7))
		assert.Empty(t, hashOf(t, ctx, srv, "report"))
	})
}

func TestAWriterTakesTheReadSideAndLeavesItInReadMode(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcess(t, srv)
	msgs := listen(t, ctx, srv, RWChannel("acct"))
	w, r := a.GetReadWriteLock("acct").WriteLock(), a.GetReadWriteLock("acct").ReadLock()
	rb := b.GetReadWriteLock("acct").ReadLock()

	require.NoError(t, w.Lock(ctx, 1, 0))
	require.NoError(t, r.Lock(ctx, 1, 0))
	ok, err := w.TryLock(ctx, 1, 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "the writer takes the write side again")
	require.NoError(t, w.Unlock(ctx, 1))
	assert.Equal(t, map[string]string{"mode": "write", a.ID() + ":1:write": "1", a.ID() + ":1": "1"}, hashOf(t, ctx, srv, "acct"))
	ok, err = rb.TryLock(ctx, 1, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "another reader is still excluded")

	require.NoError(t, w.Unlock(ctx, 1))
	assert.Equal(t, map[string]string{"mode": "read", a.ID() + ":1": "1"}, hashOf(t, ctx, srv, "acct"), "the write unlock switched to read")
	ok, err = rb.TryLock(ctx, 1, 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "readers share with the former writer")
	require.NoError(t, rb.Unlock(ctx, 1))
	require.NoError(t, r.Unlock(ctx, 1))
	assert.Empty(t, hashOf(t, ctx, srv, "acct"))
	assert.Equal(t, "0", testsupport.Recv(t, msgs, notByTTL, "the last read unlock's message").Payload,
		"the first message is the last reader's: the write unlock that left a reader published nothing")
}

func TestAReaderCannotTakeTheWriteSide(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcess(t, srv)
	r, w := a.GetReadWriteLock("up").ReadLock(), a.GetReadWriteLock("up").WriteLock()
	require.NoError(t, r.Lock(ctx, 1, 0))

	ok, err := w.TryLock(ctx, 1, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "no upgrade: the reader's own read level excludes its write")
	assert.ErrorIs(t, w.Unlock(ctx, 1), ErrNotHeld)
	assert.Equal(t, map[string]string{"mode": "read", a.ID() + ":1": "1"}, hashOf(t, ctx, srv, "up"))
	require.NoError(t, r.Unlock(ctx, 1))
}

func TestReadWriteUnlockMessages(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := newProcess(t, srv)
	msgs := listen(t, ctx, srv, RWChannel("ch"))
	r, w := a.GetReadWriteLock("ch").ReadLock(), a.GetReadWriteLock("ch").WriteLock()
	next := func(what string) string { return testsupport.Recv(t, msgs, notByTTL, what).Payload }

	require.NoError(t, w.Lock(ctx, 1, 0))
	require.NoError(t, w.Unlock(ctx, 1))
	assert.Equal(t, "1", next("a write unlock's"), "READ_UNLOCK_MESSAGE")

	require.NoError(t, r.Lock(ctx, 1, 0))
	require.NoError(t, r.Lock(ctx, 2, 0))
	require.NoError(t, r.Unlock(ctx, 2)) // another reader left: no message
	require.NoError(t, r.Unlock(ctx, 1))
	assert.Equal(t, "0", next("the last read unlock's"), "UNLOCK_MESSAGE")

	assert.ErrorIs(t, r.Unlock(ctx, 1), ErrNotHeld)
	assert.Equal(t, "0", next("a read unlock of an absent lock"), "published though nothing was held")
	assert.ErrorIs(t, w.Unlock(ctx, 1), ErrNotHeld)
	assert.Equal(t, "1", next("a write unlock of an absent lock"))
}

// A "1" releases one latch permit per thread blocked on it: every queued
// reader of a process tries again at once.
func TestAWriteUnlockWakesEveryQueuedThread(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcessCounting(t, srv, readAcquireScriptSource)
	w := a.GetReadWriteLock("feed").WriteLock()
	require.NoError(t, w.Lock(ctx, 1, 0)) // a 30 s lease: only a message ends the waits early

	r := b.GetReadWriteLock("feed").ReadLock()
	got := make(chan error, 3)
	for id := range int64(3) {
		go func() { got <- r.Lock(ctx, id, 0) }()
	}
	testsupport.Eventually(t, 5*time.Second, "three readers blocked on the latch", func() bool {
		return b.rwQueued("feed") == 3
	})
	assert.Equal(t, int64(6), b.acquires.count(), "a try, then a try once subscribed, each")
	require.NoError(t, w.Unlock(ctx, 1))
	for range 3 {
		require.NoError(t, testsupport.Recv(t, got, notByTTL, "a reader woken by the one \"1\""))
	}
	assert.Equal(t, int64(9), b.acquires.count(), "one more try each")
	for id := range int64(3) {
		require.NoError(t, r.Unlock(ctx, id))
	}
}

// A "0" releases one latch permit: one queued writer of a process tries.
func TestAReadUnlockWakesOneQueuedThread(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := newProcess(t, srv), newProcessCounting(t, srv, writeAcquireScriptSource)
	r := a.GetReadWriteLock("log").ReadLock()
	require.NoError(t, r.Lock(ctx, 1, 0))

	w := b.GetReadWriteLock("log").WriteLock()
	got := make(chan int64, 2)
	for _, id := range []int64{1, 2} {
		go func() {
			if err := w.Lock(ctx, id, 0); err == nil {
				got <- id
			}
		}()
	}
	testsupport.Eventually(t, 5*time.Second, "two writers blocked on the latch", func() bool {
		return b.rwQueued("log") == 2
	})
	require.NoError(t, r.Unlock(ctx, 1))
	first := testsupport.Recv(t, got, notByTTL, "one writer woken by the \"0\"")
	require.NoError(t, w.Unlock(ctx, first))
	second := testsupport.Recv(t, got, notByTTL, "the other woken by the first's \"1\"")
	assert.NotEqual(t, first, second)
	assert.Equal(t, int64(6), b.acquires.count(), "4 while waiting, then one per wake-up: the \"0\" woke one thread")
	require.NoError(t, w.Unlock(ctx, second))
}
