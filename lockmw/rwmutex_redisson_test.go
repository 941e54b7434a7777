package lockmw_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRedissonRW is a Redisson process (internal/redisson) on srv.
func newRedissonRW(t *testing.T, srv *redistest.Server) *redisson.Client {
	t.Helper()
	p := redisson.NewClient(srv.NewClient())
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestRWMutexBesideRedisson(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	p := newRedissonRW(t, srv)

	t.Run("a Redisson reader and an rlock reader share", func(t *testing.T) {
		prw := p.GetReadWriteLock("rs-share")
		require.NoError(t, prw.ReadLock().Lock(ctx, 1, 0))
		r, err := c.RWMutex("rs-share").TryRLock(ctx, 0, 0)
		require.NoError(t, err, "an rlock reader joins a Redisson reader")
		ok, err := p.GetReadWriteLock("rs-share").ReadLock().TryLock(ctx, 2, 0, 0)
		require.NoError(t, err)
		assert.True(t, ok, "and a Redisson reader joins them")

		// Redisson's read unlock walks the hash rlock wrote: the rlock
		// reader's level key is alive, so the hash stays.
		require.NoError(t, prw.ReadLock().Unlock(ctx, 1))
		require.NoError(t, prw.ReadLock().Unlock(ctx, 2))
		require.NoError(t, r.Err())
		h := rwHash(t, srv, "rs-share")
		assert.Equal(t, "read", h["mode"], "Redisson's unlocks kept the rlock reader's hold")
		_, err = c.RWMutex("rs-share").TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
		require.NoError(t, c.RWMutex("rs-share").RUnlock(r))
		assert.Empty(t, rwHash(t, srv, "rs-share"))
	})

	t.Run("a Redisson writer excludes rlock, and its unlock lets rlock's readers in", func(t *testing.T) {
		pw := p.GetReadWriteLock("rs-w").WriteLock()
		require.NoError(t, pw.Lock(ctx, 1, 0))
		_, err := c.RWMutex("rs-w").TryRLock(ctx, 0, 0)
		var busy *lockmw.BusyError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, p.ID()+":1:write", busy.Holder)
		_, err = c.RWMutex("rs-w").TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired)

		got := make(chan error, 2)
		holds := make(chan context.Context, 2)
		for range 2 {
			go func() {
				h, err := c.RWMutex("rs-w").RLock(ctx)
				got <- err
				holds <- h
			}()
		}
		rwWaitQueued(t, srv, "rs-w", 2)
		require.NoError(t, pw.Unlock(ctx, 1), "Redisson's write unlock publishes 1: every waiter wakes")
		for range 2 {
			require.NoError(t, <-got)
		}
		for range 2 {
			require.NoError(t, c.RWMutex("rs-w").RUnlock(<-holds))
		}
		assert.Empty(t, rwHash(t, srv, "rs-w"))
	})

	t.Run("an rlock writer excludes Redisson, whose waiters wake at its unlock", func(t *testing.T) {
		rw := c.RWMutex("rs-rw")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		ok, err := p.GetReadWriteLock("rs-rw").ReadLock().TryLock(ctx, 1, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok, "a Redisson reader waits for an rlock writer")
		ok, err = p.GetReadWriteLock("rs-rw").WriteLock().TryLock(ctx, 2, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok, "a Redisson writer too")

		got := make(chan error, 2)
		for id := range int64(2) {
			go func() { got <- p.GetReadWriteLock("rs-rw").ReadLock().Lock(ctx, 10+id, 0) }()
		}
		// Redisson's readers subscribe, then wait on the TTL (30 s) or a
		// message: only the unlock's "1" lets them in within the test.
		require.Eventually(t, func() bool {
			n, err := srv.Client().PubSubNumSub(ctx, redisson.RWChannel("rs-rw")).Result()
			return err == nil && n[redisson.RWChannel("rs-rw")] >= 1
		}, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, rw.Unlock(w))
		for range 2 {
			require.NoError(t, <-got)
		}
		_, err = rw.TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "Redisson's readers exclude an rlock writer")
		r, err := rw.TryRLock(ctx, 0, 0)
		require.NoError(t, err, "and share with an rlock reader")
		for id := range int64(2) {
			require.NoError(t, p.GetReadWriteLock("rs-rw").ReadLock().Unlock(ctx, 10+id))
		}
		require.NoError(t, rw.RUnlock(r))
		assert.Empty(t, rwHash(t, srv, "rs-rw"))
	})

	t.Run("a Redisson reader joins an rlock writer's downgraded hold", func(t *testing.T) {
		rw := c.RWMutex("rs-down")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		r, err := rw.RLock(w)
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		ok, err := p.GetReadWriteLock("rs-down").ReadLock().TryLock(ctx, 1, 0, 0)
		require.NoError(t, err)
		assert.True(t, ok, "a Redisson reader joins the downgraded hold")
		require.NoError(t, rw.RUnlock(r))
		require.NoError(t, p.GetReadWriteLock("rs-down").ReadLock().Unlock(ctx, 1))
		assert.Empty(t, rwHash(t, srv, "rs-down"))
	})
}

// rwOccupancy counts the holders inside one read-write lock's critical
// section, as each reports itself, and the times a writer was beside anyone.
type rwOccupancy struct {
	readers, writers, violations, maxReaders, reads, writes atomic.Int64
}

func (o *rwOccupancy) enterRead() {
	n := o.readers.Add(1)
	o.reads.Add(1)
	for m := o.maxReaders.Load(); n > m && !o.maxReaders.CompareAndSwap(m, n); m = o.maxReaders.Load() {
	}
	if o.writers.Load() != 0 {
		o.violations.Add(1)
	}
}

func (o *rwOccupancy) leaveRead() { o.readers.Add(-1) }

func (o *rwOccupancy) enterWrite() {
	o.writes.Add(1)
	if o.writers.Add(1) != 1 || o.readers.Load() != 0 {
		o.violations.Add(1)
	}
}

func (o *rwOccupancy) leaveWrite() { o.writers.Add(-1) }

// Two rlock Clients and two Redisson processes mix readers and writers on one
// name, a fixed number of holds each: every hold completes, and no writer is
// ever beside anyone, whoever holds.
func TestRWMutexRedissonContention(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const holds = 10
	var o rwOccupancy
	var wg sync.WaitGroup
	fail := func(who string, err error) {
		if err != nil {
			t.Errorf("%s: %v", who, err)
		}
	}
	for range 2 {
		c := locktest.NewOn(t, srv)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rw := c.RWMutex("rs-mixed")
				for i := range holds {
					fail("rlock", rwHold(ctx, rw, &o, (g+i)%3 == 0))
				}
			}()
		}
	}
	for range 2 {
		p := newRedissonRW(t, srv)
		for id := range int64(3) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rw := p.GetReadWriteLock("rs-mixed")
				for i := range holds {
					fail("redisson", rwRedissonHold(ctx, rw, id, &o, (id+int64(i))%3 == 0))
				}
			}()
		}
	}
	wg.Wait()
	assert.Zero(t, o.violations.Load(), "a writer beside another holder")
	assert.Equal(t, int64(4*3*holds), o.reads.Load()+o.writes.Load(), "every hold done")
	t.Logf("%d reads (at most %d at once), %d writes", o.reads.Load(), o.maxReaders.Load(), o.writes.Load())
	assert.Empty(t, rwHash(t, srv, "rs-mixed"))
}

// rwHold takes rw's write side (write) or read side, re-enters it, and
// gives it back.
func rwHold(ctx context.Context, rw *lockmw.RWMutex, o *rwOccupancy, write bool) error {
	if write {
		h, err := rw.Lock(ctx)
		if err != nil {
			return err
		}
		o.enterWrite()
		r, err := rw.RLock(h) // the writer's read side
		o.leaveWrite()
		return errors.Join(err, rw.RUnlock(r), rw.Unlock(h))
	}
	h, err := rw.RLock(ctx)
	if err != nil {
		return err
	}
	o.enterRead()
	in, err := rw.RLock(h)
	o.leaveRead()
	return errors.Join(err, rw.RUnlock(in), rw.RUnlock(h))
}

// rwRedissonHold is rwHold for a Redisson thread.
func rwRedissonHold(ctx context.Context, rw *redisson.ReadWriteLock, id int64, o *rwOccupancy, write bool) error {
	if write {
		w := rw.WriteLock()
		if err := w.Lock(ctx, id, 0); err != nil {
			return err
		}
		o.enterWrite()
		o.leaveWrite()
		return w.Unlock(ctx, id)
	}
	r := rw.ReadLock()
	if err := r.Lock(ctx, id, 0); err != nil {
		return err
	}
	o.enterRead()
	o.leaveRead()
	return r.Unlock(ctx, id)
}
