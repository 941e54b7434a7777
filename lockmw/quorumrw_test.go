package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwCounter counts a read-write lock's holders at once, from each Lock's
// return to its Unlock's call (inside the true hold), and what they saw:
// readers beside a writer, or two writers.
type rwCounter struct {
	mu                 sync.Mutex
	readers, writers   int
	mostReaders        int
	overlaps           []string
	reads, writes, bad atomic.Int64
}

func (c *rwCounter) enter(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if write {
		c.writers++
		c.writes.Add(1)
	} else {
		c.readers++
		c.reads.Add(1)
		c.mostReaders = max(c.mostReaders, c.readers)
	}
	if c.writers > 1 || c.writers == 1 && c.readers > 0 {
		c.overlaps = append(c.overlaps, fmt.Sprintf("%d writers and %d readers at once", c.writers, c.readers))
	}
}

func (c *rwCounter) leave(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if write {
		c.writers--
	} else {
		c.readers--
	}
}

// On three masters reached with go-redis clients of default options, eight
// quorum Clients take a read-write lock's sides on a random schedule (reads
// three times in four; waits from a single attempt to a long wait; watchdog
// holds and leases; holds of up to 3 ms): no writer ever held beside a
// reader or another writer, readers held together, and the fencing tokens
// of the write holds only grew.
func TestQuorumRWMutexExcludes(t *testing.T) {
	t.Parallel()
	_, rdbs, _ := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	const name = "q-rw-excl"
	var cnt rwCounter
	var tokMu sync.Mutex
	var lastToken int64
	var wg sync.WaitGroup
	for i := range 8 {
		c := newQuorum(t, rdbs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := c.RWMutex(name, lockmw.WithFencing())
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			for range 30 {
				write := rnd.IntN(4) == 0
				wait := []time.Duration{0, 50 * time.Millisecond, 5 * time.Second}[rnd.IntN(3)]
				lease := []time.Duration{0, 2 * time.Second}[rnd.IntN(2)]
				var h context.Context
				var err error
				if write {
					h, err = rw.TryLock(ctx, wait, lease)
				} else {
					h, err = rw.TryRLock(ctx, wait, lease)
				}
				if errors.Is(err, lockmw.ErrNotAcquired) {
					cnt.bad.Add(1)
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				cnt.enter(write)
				if write {
					tok, ok := rw.Token(h)
					assert.True(t, ok)
					tokMu.Lock()
					assert.Greater(t, tok, lastToken, "a write hold's token went back")
					lastToken = tok
					tokMu.Unlock()
				}
				time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond) // the critical section
				cnt.leave(write)
				if write {
					assert.NoError(t, rw.Unlock(h))
				} else {
					assert.NoError(t, rw.RUnlock(h))
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d reads (at most %d at once), %d writes, %d attempts busy", cnt.reads.Load(), cnt.mostReaders, cnt.writes.Load(), cnt.bad.Load())
	assert.Empty(t, cnt.overlaps)
	assert.Positive(t, cnt.writes.Load())
	assert.Positive(t, cnt.reads.Load())
}

// Readers on two quorum Clients share the lock; a writer waits until both
// left (woken by the last release, not polling: the watchdog's third is
// 10 s) and then excludes readers, whose waits all end with the writer's
// release; the sides re-enter, a writer takes the read side and keeps it
// past its write Unlock (a downgrade), a reader cannot take the write side
// (ErrUpgrade), and the hooks name the read-write lock and its side.
func TestQuorumRWMutexBasics(t *testing.T) {
	t.Parallel()
	srvs, rdbs, _ := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	var mu sync.Mutex
	var ends []lockmw.AcquireEndEvent
	a := newQuorum(t, rdbs, lockmw.WithHooks(lockmw.Hooks{AcquireEnd: func(_ context.Context, e lockmw.AcquireEndEvent) {
		mu.Lock()
		ends = append(ends, e)
		mu.Unlock()
	}}))
	b := newQuorum(t, rdbs)
	const name = "q-rw-basic"
	ra, rb := a.RWMutex(name), b.RWMutex(name)
	require.NoError(t, ra.Err())

	h1, err := ra.RLock(ctx)
	require.NoError(t, err)
	h2, err := rb.RLock(ctx)
	require.NoError(t, err, "readers share")
	inner, err := ra.RLock(h1)
	require.NoError(t, err, "a reader re-enters")
	require.NoError(t, ra.RUnlock(inner))
	_, err = ra.Lock(h1)
	assert.ErrorIs(t, err, lockmw.ErrUpgrade)
	_, err = b.RWMutex(name).TryLock(ctx, 0, 0)
	var be *lockmw.BusyError
	require.ErrorAs(t, err, &be, "a writer beside readers")
	assert.Positive(t, be.TTL)

	wrote := make(chan error, 1)
	go func() {
		hw, err := rb.TryLock(ctx, 30*time.Second, 0)
		if err == nil {
			err = rb.Unlock(hw)
		}
		wrote <- err
	}()
	require.NoError(t, ra.RUnlock(h1))
	require.NoError(t, rb.RUnlock(h2))
	require.NoError(t, testsupport.Recv(t, wrote, 30*time.Second, "the writer, once both readers left"))

	hw, err := ra.Lock(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, keysOn(t, srvs, name), 2, "the write side held on a majority")
	hw2, err := ra.Lock(hw)
	require.NoError(t, err, "a writer re-enters")
	require.NoError(t, ra.Unlock(hw2))
	_, err = rb.TryRLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "a reader beside a writer")

	// The writer takes the read side; after its write Unlock (a downgrade)
	// other readers join it, a writer still waits.
	hr, err := ra.RLock(hw)
	require.NoError(t, err, "the writer takes the read side")
	hr2, err := ra.RLock(hw)
	require.NoError(t, err, "again: a level more of its read hold")
	require.NoError(t, ra.RUnlock(hr2))
	_, err = rb.TryRLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "another reader beside the writer")
	require.NoError(t, ra.Unlock(hw))
	require.NoError(t, hr.Err(), "the read hold outlives the write hold")
	// Unlock returned on a majority; a try that does not wait may be decided
	// before the last master's release lands (docs/topologies.md), so the
	// reader waits for it.
	ho, err := rb.TryRLock(ctx, 30*time.Second, 0)
	require.NoError(t, err, "after the downgrade another reader joins")
	require.NoError(t, rb.RUnlock(ho))
	_, err = rb.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "a writer beside the downgraded reader")
	require.NoError(t, ra.RUnlock(hr))

	hw, err = ra.Lock(ctx)
	require.NoError(t, err)
	read := make(chan error, 2)
	for range 2 {
		go func() {
			hr, err := b.RWMutex(name).TryRLock(ctx, 30*time.Second, 0)
			if err == nil {
				err = b.RWMutex(name).RUnlock(hr)
			}
			read <- err
		}()
	}
	require.NoError(t, ra.Unlock(hw))
	for range 2 {
		require.NoError(t, testsupport.Recv(t, read, 30*time.Second, "a waiting reader, once the writer left"))
	}

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, ends)
	for _, e := range ends {
		assert.Equal(t, name, e.Name)
		assert.Equal(t, "rwmutex", e.Kind)
		assert.Contains(t, []string{"read", "write"}, e.Mode)
	}
}

// One of three masters paused (go-redis's default options): both sides'
// Lock, renewals and Unlock go at the pace of the two that answer; with two
// paused, a reader's renewals lose the majority and its hold is lost.
func TestQuorumRWMutexPausedMasters(t *testing.T) {
	t.Parallel()
	srvs, rdbs, late := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	const name = "q-rw-paused"
	rn := newRenewals(name)
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	rw := c.RWMutex(name)
	h, err := rw.Lock(ctx) // every connection warm
	require.NoError(t, err)
	require.NoError(t, rw.Unlock(h))
	h, err = rw.RLock(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.RUnlock(h))

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	began, returned := timed(func() { h, err = rw.Lock(ctx) })
	require.NoError(t, err)
	assertNotWaitedFor(t, late, "Lock", began, returned)
	rn.await(t, h, "a renewal")
	require.NoError(t, h.Err())
	began, returned = timed(func() { require.NoError(t, rw.Unlock(h)) })
	assertNotWaitedFor(t, late, "Unlock", began, returned)
	began, returned = timed(func() { h, err = rw.RLock(ctx) })
	require.NoError(t, err)
	assertNotWaitedFor(t, late, "RLock", began, returned)
	rn.await(t, h, "a renewal")
	require.NoError(t, h.Err())

	require.NoError(t, srvs[1].Pause())
	t.Cleanup(func() { _ = srvs[1].Resume() })
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the read hold outlived the majority")
	}
	assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
	assert.ErrorIs(t, rw.RUnlock(h), lockmw.ErrLockLost)
}
