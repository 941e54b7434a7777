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

// mustPermit takes a permit of s, failing the test if Lock returns an error.
func mustPermit(t *testing.T, s *lockmw.Semaphore, ctx context.Context) context.Context {
	t.Helper()
	h, err := s.Lock(ctx)
	require.NoError(t, err, "Lock(%q)", s.Name())
	return h
}

// On three masters reached with go-redis clients of default options, eight
// quorum Clients take a semaphore of N = 1, 2 and 3 permits on a random
// schedule (waits from a single attempt to a long wait, watchdog holds and
// leases, holds of up to 3 ms): the holders, counted from each Lock's return
// to its Unlock's call (inside the true hold), are never more than N; the
// waits end with a permit (woken by a release: a quorum never queues); and
// the permits' keys are gone from every master at the end.
func TestQuorumSemaphoreNeverOverGrants(t *testing.T) {
	t.Parallel()
	srvs, rdbs, _ := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	clients := make([]*lockmw.Client, 8)
	for i := range clients {
		clients[i] = newQuorum(t, rdbs)
	}
	for permits := 1; permits <= 3; permits++ {
		name := fmt.Sprintf("q-sem-%d", permits)
		var holders limitChecker
		var holds, busy atomic.Int64
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := c.Semaphore(name, permits)
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(permits)))
				for range 25 {
					wait := []time.Duration{0, 50 * time.Millisecond, 5 * time.Second}[rnd.IntN(3)]
					lease := []time.Duration{0, 2 * time.Second}[rnd.IntN(2)]
					h, err := s.TryLock(ctx, wait, lease)
					if errors.Is(err, lockmw.ErrNotAcquired) {
						busy.Add(1)
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					assert.LessOrEqual(t, holders.enter(), int64(permits), "over-granted")
					holds.Add(1)
					time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond) // the critical section
					holders.leave()
					assert.NoError(t, s.Unlock(h))
				}
			}()
		}
		wg.Wait()
		t.Logf("%d permits: %d holds, %d attempts busy, at most %d holders at once", permits, holds.Load(), busy.Load(), holders.max.Load())
		assert.LessOrEqual(t, holders.max.Load(), int64(permits))
		assert.Positive(t, holds.Load())
		for i := range permits {
			key := fmt.Sprintf("{%s}:rlock_permit:%d", name, i)
			testsupport.Eventually(t, 30*time.Second, key+" gone from every master", func() bool { return keysOn(t, srvs, key) == 0 })
		}
	}
}

// A quorum semaphore of two permits: two holds take both permits (the
// hooks name the semaphore, not its permits), a third attempt is busy with
// the earliest TTL, Available counts, a waiter is woken by a release on
// another Client, and a second permit taken with a hold context of the
// first is released first.
func TestQuorumSemaphoreBasics(t *testing.T) {
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
	const name = "q-sem-basic"
	s := a.Semaphore(name, 2)
	require.NoError(t, s.Err())
	n, err := s.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	h1 := mustPermit(t, s, ctx)
	h2 := mustPermit(t, s, h1) // a second permit, in the first's context
	n, err = s.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	for i := range 2 {
		assert.GreaterOrEqual(t, keysOn(t, srvs, fmt.Sprintf("{%s}:rlock_permit:%d", name, i)), 2, "permit %d held on a majority", i)
	}
	_, err = b.Semaphore(name, 2).TryLock(ctx, 0, 0)
	var be *lockmw.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, name, be.Name)
	assert.Positive(t, be.TTL)

	got := make(chan error, 1)
	go func() {
		hb, err := b.Semaphore(name, 2).TryLock(ctx, 30*time.Second, 0)
		if err == nil {
			err = b.Semaphore(name, 2).Unlock(hb)
		}
		got <- err
	}()
	require.NoError(t, s.Unlock(h2)) // the innermost: h2's permit
	require.NoError(t, testsupport.Recv(t, got, 30*time.Second, "the waiter"))
	require.NoError(t, h1.Err(), "the first permit is still held")
	require.NoError(t, s.Unlock(h1))
	assert.ErrorIs(t, s.Unlock(h1), lockmw.ErrNotHeld)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, ends)
	for _, e := range ends {
		assert.Equal(t, name, e.Name)
		assert.Equal(t, "semaphore", e.Kind)
		assert.Equal(t, 2, e.Permits)
	}
}

// One of three masters paused (go-redis's default options: a read would
// wait 3 s): Lock, renewals and Unlock of a quorum semaphore's permit go at
// the pace of the two that answer, and with two of three paused the
// renewals lose the majority and the hold is lost (ErrLockLost).
func TestQuorumSemaphorePausedMasters(t *testing.T) {
	t.Parallel()
	srvs, rdbs, late := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	const name = "q-sem-paused"
	rn := newRenewals(name)
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	s := c.Semaphore(name, 2)
	require.NoError(t, s.Unlock(mustPermit(t, s, ctx))) // every connection warm

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	var h context.Context
	began, returned := timed(func() { h = mustPermit(t, s, ctx) })
	assertNotWaitedFor(t, late, "Lock", began, returned)
	for i := range 3 {
		rn.await(t, h, "a renewal")
		require.NoError(t, h.Err(), "held after %d renewals: %v", i+1, context.Cause(h))
	}
	began, returned = timed(func() { require.NoError(t, s.Unlock(h)) })
	assertNotWaitedFor(t, late, "Unlock", began, returned)

	h = mustPermit(t, s, ctx)
	require.NoError(t, srvs[1].Pause())
	t.Cleanup(func() { _ = srvs[1].Resume() })
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the hold outlived the majority")
	}
	assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
	assert.ErrorIs(t, s.Unlock(h), lockmw.ErrLockLost)
}

// A multi-lock over quorum members works member-wise: a quorum mutex and a
// quorum semaphore's permit, taken together and released together.
func TestQuorumMultiLockOfMutexAndSemaphore(t *testing.T) {
	t.Parallel()
	_, rdbs, _ := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	a, b := newQuorum(t, rdbs), newQuorum(t, rdbs)
	ml := a.MultiLock(a.Mutex("q-ml-m"), a.Semaphore("q-ml-s", 1))
	require.NoError(t, ml.Err())
	h, err := ml.Lock(ctx)
	require.NoError(t, err)
	_, err = b.Mutex("q-ml-m").TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "the mutex member is held")
	_, err = b.Semaphore("q-ml-s", 1).TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "the semaphore member's one permit is held")
	require.NoError(t, ml.Unlock(h))
	// Unlock returned on a majority of each member; a try that does not wait
	// may be decided before the last master's release lands
	// (docs/topologies.md), so the next holder waits for it.
	hm, err := b.Mutex("q-ml-m").TryLock(ctx, 30*time.Second, 0)
	require.NoError(t, err, "the mutex member was released")
	require.NoError(t, b.Mutex("q-ml-m").Unlock(hm))
	hs, err := b.Semaphore("q-ml-s", 1).TryLock(ctx, 30*time.Second, 0)
	require.NoError(t, err, "the permit was released")
	require.NoError(t, b.Semaphore("q-ml-s", 1).Unlock(hs))
}
