package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReentrancy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	m := a.Mutex("reentrant")

	outer := locktest.MustLock(t, m, ctx)
	inner, err := a.Mutex("reentrant").Lock(outer) // another Mutex value, same Client and name
	require.NoError(t, err, "re-entry through the hold context must not block")
	n, err := m.HoldCount(inner)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "hold count after re-entry")

	fields, err := srv.Client().HGetAll(ctx, "reentrant").Result()
	require.NoError(t, err)
	require.Len(t, fields, 1, "one owner field")
	for f, v := range fields {
		assert.Regexp(t, "^"+a.ID()+`:\d+$`, f, "field is <clientID>:<ownerID>")
		assert.Equal(t, "2", v)
	}

	// Another Client is another owner, even in this process, even with the hold context.
	_, err = b.Mutex("reentrant").TryLock(inner, 0, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)

	// A context without the hold is a new owner of the same client: busy too.
	_, err = m.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)

	require.NoError(t, m.Unlock(inner))
	assert.ErrorIs(t, m.Unlock(inner), lockmw.ErrNotHeld, "unlocking one level twice")
	require.Error(t, inner.Err(), "the inner level's context ends at its Unlock")
	require.NoError(t, outer.Err(), "the outer hold goes on")
	n, err = m.HoldCount(outer)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "an inner unlock keeps the key")

	require.NoError(t, m.Unlock(outer))
	assert.ErrorIs(t, outer.Err(), context.Canceled, "the hold context ends with the last Unlock")
	locked, err = m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the last unlock deletes the key")
	assert.ErrorIs(t, m.Unlock(outer), lockmw.ErrNotHeld)
	assert.ErrorIs(t, m.Unlock(context.Background()), lockmw.ErrNotHeld, "a context that holds nothing")
}

func TestNestedDifferentLocks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	a, b := c.Mutex("nest-a"), c.Mutex("nest-b")
	ha := locktest.MustLock(t, a, ctx)
	hb := locktest.MustLock(t, b, ha)
	// hb carries both holds: re-entering a through it works.
	ha2, err := a.TryLock(hb, 0, 0)
	require.NoError(t, err)
	n, err := a.HoldCount(ha2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	require.NoError(t, a.Unlock(ha2))
	require.NoError(t, b.Unlock(hb))
	require.NoError(t, a.Unlock(hb), "hb still carries a's outer level")
	assert.ErrorIs(t, a.Unlock(ha), lockmw.ErrNotHeld, "that level was released through hb")
}

func TestNonOwnerUnlock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	h := locktest.MustLock(t, a.Mutex("owned"), ctx)
	assert.ErrorIs(t, b.Mutex("owned").Unlock(h), lockmw.ErrNotHeld, "a foreign client's context")
	assert.ErrorIs(t, b.Mutex("owned").Unlock(ctx), lockmw.ErrNotHeld)
	assert.ErrorIs(t, a.Mutex("other").Unlock(h), lockmw.ErrNotHeld, "another name")
	held, err := a.Mutex("owned").IsHeld(h)
	require.NoError(t, err)
	assert.True(t, held, "the holder keeps the lock")
	require.NoError(t, a.Mutex("owned").Unlock(h))
}

func TestCallerContextCancelled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const timeout = time.Second
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(timeout))
	m := c.Mutex("caller-cancel")
	cause := errors.New("request finished")
	ctx, cancel := context.WithCancelCause(context.Background())
	h := locktest.MustLock(t, m, ctx)
	cancel(cause)
	testsupport.Done(t, h, time.Second, "hold context follows the caller's")
	assert.ErrorIs(t, context.Cause(h), cause, "the caller's cause")
	// Renewal goes on: the key outlives the watchdog timeout.
	deadline := time.Now().Add(2 * timeout)
	for time.Now().Before(deadline) {
		ttl, err := m.TTL(context.Background())
		require.NoError(t, err)
		require.Greater(t, ttl, time.Duration(0), "renewal must go on after the caller's context ended")
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, m.Unlock(h), "Unlock with a cancelled context releases")
	locked, err := m.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

func TestLeaseEnd(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	m := a.Mutex("leased")
	before := time.Now()
	h, err := m.TryLock(ctx, 0, 200*time.Millisecond)
	after := time.Now()
	require.NoError(t, err)
	dl, ok := h.Deadline()
	require.True(t, ok, "a leased hold has a deadline")
	// The lease runs from a moment during the call; the hold ends a clock
	// drift margin (a hundredth of the lease and 2ms) before the key does.
	const margin = 200*time.Millisecond/100 + 2*time.Millisecond
	assert.False(t, dl.Before(before.Add(200*time.Millisecond-margin)), "deadline %v before the call's start + lease - margin", dl)
	assert.False(t, dl.After(after.Add(200*time.Millisecond)), "deadline %v after the call's return + lease", dl)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, 200*time.Millisecond)
	testsupport.Done(t, h, time.Second, "lease end")
	assert.ErrorIs(t, h.Err(), context.DeadlineExceeded)
	// Nothing renews it: it expires and another owner takes it.
	testsupport.Eventually(t, 2*time.Second, "leased key expires", func() bool {
		ok, err := m.IsLocked(ctx)
		return err == nil && !ok
	})
	hb := locktest.MustLock(t, b.Mutex("leased"), ctx)
	assert.ErrorIs(t, m.Unlock(h), lockmw.ErrLockLost, "unlock after the lease ran out and someone else took it")
	held, err := b.Mutex("leased").IsHeld(hb)
	require.NoError(t, err)
	assert.True(t, held, "the new holder's lock is untouched")
}

func TestLeaseUnlockedInTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	m := locktest.NewOn(t, srv).Mutex("leased-ok")
	h, err := m.TryLock(ctx, 0, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, m.Unlock(h))
}

func TestWatchdogRenews(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const timeout = 600 * time.Millisecond
	m := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(timeout)).Mutex("renewed")
	locking := time.Now()
	h := locktest.MustLock(t, m, ctx)
	ttl, err := m.TTL(ctx)
	read := time.Now()
	require.NoError(t, err)
	// Set to the watchdog timeout during Lock (or a renewal since), read
	// during TTL: PTTL counts whole milliseconds.
	assert.LessOrEqual(t, ttl, timeout, "TTL is the watchdog timeout")
	assert.GreaterOrEqual(t, ttl, timeout-read.Sub(locking)-time.Millisecond, "TTL is the watchdog timeout")
	end := time.Now().Add(4 * timeout)
	for time.Now().Before(end) {
		ok, err := m.IsHeld(h)
		require.NoError(t, err)
		require.True(t, ok, "held past the watchdog timeout")
		require.NoError(t, h.Err())
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, m.Unlock(h))
}

func TestReentryKeepsOuterRegime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const timeout = 300 * time.Millisecond
	m := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(timeout)).Mutex("regime")
	outer := locktest.MustLock(t, m, context.Background())
	inner, err := m.TryLock(outer, 0, 20*time.Millisecond) // a short lease on re-entry
	require.NoError(t, err)
	_, hasDeadline := inner.Deadline()
	assert.False(t, hasDeadline, "a re-entry keeps the outer (watchdog) regime")
	time.Sleep(2 * timeout) // the inner lease would long have ended
	ok, err := m.IsHeld(inner)
	require.NoError(t, err)
	assert.True(t, ok, "a re-entry never shortens the outer hold")
	require.NoError(t, m.Unlock(inner))
	require.NoError(t, m.Unlock(outer))

	// And a leased outer hold is not extended by a watchdog re-entry.
	lo, err := m.TryLock(ctx, 0, 300*time.Millisecond)
	require.NoError(t, err)
	li, err := m.Lock(lo)
	require.NoError(t, err)
	d1, _ := lo.Deadline()
	d2, ok2 := li.Deadline()
	require.True(t, ok2)
	assert.Equal(t, d1, d2)
	testsupport.Done(t, li, 2*time.Second, "inner level ends with the outer lease")
	testsupport.Eventually(t, 2*time.Second, "the key expires at the outer lease end", func() bool {
		ok, err := m.IsLocked(ctx)
		return err == nil && !ok
	})
}

func TestWaitHandOff(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ha := locktest.MustLock(t, a.Mutex("handoff"), ctx)

	got := make(chan context.Context, 1)
	errc := make(chan error, 1)
	go func() {
		h, err := b.Mutex("handoff").Lock(ctx)
		if err != nil {
			errc <- err
			return
		}
		got <- h
	}()
	// The waiter is queued in Redis.
	testsupport.Eventually(t, 5*time.Second, "waiter queued", func() bool {
		n, _ := srv.Client().ZCard(ctx, "rlock_queue:{handoff}").Result()
		return n == 1
	})
	select {
	case <-got:
		t.Fatal("acquired while held")
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	require.NoError(t, a.Mutex("handoff").Unlock(ha))
	var hb context.Context
	select {
	case hb = <-got:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(5 * time.Second): // far below the 30s TTL: woken, not timed out
		t.Fatal("waiter not woken by the unlock")
	}
	hash, err := srv.Client().HGetAll(ctx, "handoff").Result()
	require.NoError(t, err)
	require.Len(t, hash, 2, "the holder's field and rlock:handoffs")
	assert.Equal(t, "1", hash["rlock:handoffs"], "one hand-off in a row")
	for f := range hash {
		if f != "rlock:handoffs" {
			assert.Regexp(t, "^"+b.ID()+":", f, "the lock was handed to the waiter")
		}
	}
	n, err := srv.Client().Exists(ctx, "rlock_queue:{handoff}").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "queue emptied")
	require.NoError(t, b.Mutex("handoff").Unlock(hb))
}

func TestTryLockWaitTimesOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ha := locktest.MustLock(t, a.Mutex("timeout"), ctx)
	start := time.Now()
	_, err := b.Mutex("timeout").TryLock(ctx, 150*time.Millisecond, 0)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "waited the whole wait")
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.Equal(t, "timeout", busy.Name)
	assert.Greater(t, busy.TTL, time.Duration(0))
	assert.Regexp(t, "^"+a.ID()+":", busy.Holder)
	n, err := srv.Client().ZCard(ctx, "rlock_queue:{timeout}").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a waiter that gives up leaves the queue")
	require.NoError(t, a.Mutex("timeout").Unlock(ha))
}

func TestWaitContextCancelled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ha := locktest.MustLock(t, a.Mutex("cancel-wait"), ctx)
	// A wait that ends at its deadline: whether its first attempt was
	// answered by then depends on the machine's load (a new client's first
	// round trip dials, says HELLO and loads the script), so no busy reply
	// is asked for here.
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := b.Mutex("cancel-wait").Lock(wctx)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the context error is joined")

	// cancelledQueued is the error of a Lock on wctx that end ends once the
	// waiter is queued, so once an attempt was answered busy. A waiter that
	// gave up before leaves the queue in the background: its entry must not
	// be taken for this one's.
	cancelledQueued := func(wctx context.Context, end func()) error {
		testsupport.Eventually(t, 30*time.Second, "the queue empty", func() bool {
			n, err := srv.Client().ZCard(ctx, "rlock_queue:{cancel-wait}").Result()
			return err == nil && n == 0
		})
		got := make(chan error, 1)
		go func() {
			_, err := b.Mutex("cancel-wait").Lock(wctx)
			got <- err
		}()
		testsupport.Eventually(t, 30*time.Second, "the waiter queued", func() bool {
			n, err := srv.Client().ZCard(ctx, "rlock_queue:{cancel-wait}").Result()
			return err == nil && n == 1
		})
		end()
		return testsupport.Recv(t, got, 30*time.Second, "the cancelled Lock")
	}

	// A wait cancelled once it is queued: the busy reply is joined too.
	qctx, cancelQueued := context.WithCancel(ctx)
	defer cancelQueued()
	err = cancelledQueued(qctx, cancelQueued)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled, "the context error is joined")
	var busy *lockmw.BusyError
	assert.ErrorAs(t, err, &busy, "the busy reply of the answered attempt")

	// Cancelled with a cause, as River's StopAndCancel cancels a job's
	// context: the error matches context.Canceled and the cause. The wait
	// used to join only the cause (rivermw's TestStopAndCancelEndsAWait, in
	// a make stress).
	stop := errors.New("stop initiated")
	cctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	err = cancelledQueued(cctx, func() { cancelCause(stop) })
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled, "the context error is joined")
	assert.ErrorIs(t, err, stop, "and so is its cause")

	done, cancel2 := context.WithCancel(ctx)
	cancel2()
	_, err = b.Mutex("cancel-wait").Lock(done)
	assert.ErrorIs(t, err, context.Canceled)
	ended, endCause := context.WithCancelCause(ctx)
	endCause(stop)
	_, err = b.Mutex("cancel-wait").Lock(ended)
	assert.ErrorIs(t, err, context.Canceled, "a context ended before the call")
	assert.ErrorIs(t, err, stop, "with its cause")
	require.NoError(t, a.Mutex("cancel-wait").Unlock(ha))
}

func TestWaitersShareOneSubscription(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ha := locktest.MustLock(t, a.Mutex("shared-sub"), ctx)
	const n = 5
	var wg sync.WaitGroup
	var inside, maxInside atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := b.Mutex("shared-sub")
			h, err := m.Lock(ctx)
			if !assert.NoError(t, err) {
				return
			}
			v := inside.Add(1)
			for {
				old := maxInside.Load()
				if v <= old || maxInside.CompareAndSwap(old, v) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			assert.NoError(t, m.Unlock(h))
		}()
	}
	testsupport.Eventually(t, 5*time.Second, "all waiters queued", func() bool {
		q, _ := srv.Client().ZCard(ctx, "rlock_queue:{shared-sub}").Result()
		return q == n
	})
	// One pub/sub connection, subscribed to the name's three channels (Redisson's, the roll-call, its hand-off) once.
	testsupport.Eventually(t, 5*time.Second, "one pub/sub connection with three channels", func() bool {
		list, err := srv.Client().ClientList(ctx).Result()
		if err != nil {
			return false
		}
		var conns, subs int
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			if strings.Contains(line, " sub=0 ") && strings.Contains(line, " ssub=0 ") {
				continue
			}
			conns++
			if strings.Contains(line, " sub=3 ") {
				subs++
			}
		}
		return conns == 1 && subs == 1
	})
	require.NoError(t, a.Mutex("shared-sub").Unlock(ha))
	wg.Wait()
	assert.Equal(t, int32(1), maxInside.Load(), "mutual exclusion")
}

// TestOneUnlockWakesOneWaiter counts the scripts that W clients waiting on
// one name send while the lock passes through all of them: with a queue and
// hand-off it is one failed attempt and one release per acquisition, not a
// herd of W attempts per unlock.
func TestOneUnlockWakesOneWaiter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const workers, rounds = 8, 10
	var scripts atomic.Int64
	clients := make([]*lockmw.Client, workers)
	for i := range clients {
		rdb := srv.NewClient()
		rdb.AddHook(countScripts{&scripts})
		clients[i] = lockmw.New(rdb)
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	var wg sync.WaitGroup
	var inside atomic.Int32
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.Mutex("herd")
			for range rounds {
				h, err := m.Lock(ctx)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "mutual exclusion")
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				assert.NoError(t, m.Unlock(h))
			}
		}()
	}
	wg.Wait()
	acq := int64(workers * rounds)
	perAcq := float64(scripts.Load()) / float64(acq)
	t.Logf("%d scripts for %d acquisitions: %.2f per acquisition", scripts.Load(), acq, perAcq)
	assert.LessOrEqual(t, perAcq, 3.5, "scripts per acquisition (a herd would be ~%d)", workers)
}

func TestUnlockAt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(time.Second)), locktest.NewOn(t, srv)
	m := a.Mutex("unlock-at")
	h := locktest.MustLock(t, m, ctx)
	at := time.Now().Add(400 * time.Millisecond)
	unlocking := time.Now()
	require.NoError(t, m.UnlockAt(h, at))
	unlockTook := time.Since(unlocking)
	assert.ErrorIs(t, h.Err(), context.Canceled, "the hold context ends now")
	reading := time.Now()
	ttl, err := m.TTL(ctx)
	read := time.Now()
	require.NoError(t, err)
	// The key expires at at, late by at most the time UnlockAt took to
	// reach the server; PTTL counts whole milliseconds.
	assert.GreaterOrEqual(t, ttl, at.Sub(read)-time.Millisecond, "the key expires at at")
	assert.LessOrEqual(t, ttl, at.Sub(reading)+unlockTook+time.Millisecond, "the key expires at at")
	_, err = b.Mutex("unlock-at").TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "still owned until at")
	hb, err := b.Mutex("unlock-at").TryLock(ctx, 3*time.Second, 0)
	require.NoError(t, err, "free once at has passed")
	assert.False(t, time.Now().Before(at), "not before at")
	require.NoError(t, b.Mutex("unlock-at").Unlock(hb))

	// At a time that has passed: released at once.
	h = locktest.MustLock(t, m, ctx)
	require.NoError(t, m.UnlockAt(h, time.Now().Add(-time.Second)))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)

	// On an inner level it is a plain Unlock.
	h = locktest.MustLock(t, m, ctx)
	inner := locktest.MustLock(t, m, h)
	require.NoError(t, m.UnlockAt(inner, time.Now().Add(time.Hour)))
	n, err := m.HoldCount(h)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, m.Unlock(h))
}

func TestForceUnlock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(300*time.Millisecond)), locktest.NewOn(t, srv)
	ma := a.Mutex("forced")
	h := locktest.MustLock(t, ma, ctx)
	existed, err := b.Mutex("forced").ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, existed)
	testsupport.Done(t, h, time.Second, "the holder learns of the force unlock at its next renewal")
	assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
	hb := locktest.MustLock(t, b.Mutex("forced"), ctx)
	assert.ErrorIs(t, ma.Unlock(h), lockmw.ErrLockLost)
	held, err := b.Mutex("forced").IsHeld(hb)
	require.NoError(t, err)
	assert.True(t, held, "the lost holder's Unlock touched nothing")
	require.NoError(t, b.Mutex("forced").Unlock(hb))
	existed, err = b.Mutex("forced").ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, existed)
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	m := a.Mutex("intro")
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Zero(t, ttl, "TTL of an unlocked lock")
	h, err := m.TryLock(ctx, 0, 10*time.Second)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		ctx  context.Context
		mu   *lockmw.Mutex
		held bool
		n    int
	}{
		{"holder", h, m, true, 1},
		{"no hold in context", ctx, m, false, 0},
		{"other client with the hold context", h, b.Mutex("intro"), false, 0},
	} {
		held, err := c.mu.IsHeld(c.ctx)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.held, held, c.name)
		n, err := c.mu.HoldCount(c.ctx)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.n, n, c.name)
		locked, err := c.mu.IsLocked(c.ctx)
		require.NoError(t, err)
		assert.True(t, locked, c.name)
	}
	ttl, err = b.Mutex("intro").TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, float64(10*time.Second), float64(ttl), float64(time.Second))
	require.NoError(t, m.Unlock(h))
}

func TestClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := lockmw.New(srv.NewClient())
	b := locktest.NewOn(t, srv)
	m := a.Mutex("closing")
	h := locktest.MustLock(t, m, ctx)
	hb := locktest.MustLock(t, b.Mutex("closing-2"), ctx)

	// A waiter blocked in Lock when Close runs returns ErrClosed.
	waitErr := make(chan error, 1)
	go func() {
		_, err := a.Mutex("closing-2").Lock(ctx)
		waitErr <- err
	}()
	testsupport.Eventually(t, 5*time.Second, "waiter queued", func() bool {
		n, _ := srv.Client().ZCard(ctx, "rlock_queue:{closing-2}").Result()
		return n == 1
	})
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close twice")
	assert.ErrorIs(t, context.Cause(h), lockmw.ErrClosed)
	assert.ErrorIs(t, <-waitErr, lockmw.ErrClosed)
	n, err := srv.Client().ZCard(ctx, "rlock_queue:{closing-2}").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the closed client's waiter left the queue")
	_, err = m.Lock(ctx)
	assert.ErrorIs(t, err, lockmw.ErrClosed)
	// Deferred unlocks still free the lock at shutdown.
	require.NoError(t, m.Unlock(h))
	locked, err := b.Mutex("closing").IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	require.NoError(t, b.Mutex("closing-2").Unlock(hb))
}

func TestMutualExclusionManyClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const clients, goroutines, rounds = 3, 4, 10
	var inside atomic.Int32
	var total atomic.Int32
	var wg sync.WaitGroup
	for i := range clients {
		c := locktest.NewOn(t, srv)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := c.Mutex("mutex-many")
				for r := range rounds {
					var h context.Context
					var err error
					if (g+r)%2 == 0 {
						h, err = m.Lock(ctx)
					} else {
						h, err = m.TryLock(ctx, 10*time.Second, 5*time.Second)
					}
					if !assert.NoError(t, err, fmt.Sprintf("client %d", i)) {
						return
					}
					assert.Equal(t, int32(1), inside.Add(1), "two holders at once")
					inside.Add(-1)
					total.Add(1)
					assert.NoError(t, m.Unlock(h))
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, int32(clients*goroutines*rounds), total.Load())
}

func TestClientDone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := lockmw.New(srv.NewClient())
	select {
	case <-c.Done():
		t.Fatal("Done is closed before Close")
	default:
	}
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is open after Close")
	}
}
