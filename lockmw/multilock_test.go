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

// assertFree fails unless every mutex is unlocked in Redis.
func assertFree(t *testing.T, ctx context.Context, ms ...*lockmw.Mutex) {
	t.Helper()
	for _, m := range ms {
		locked, err := m.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "%s is left held", m.Name())
	}
}

func TestMultiLockAllOrNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	a, b, z := c.Mutex("all-a"), c.Mutex("all-b"), c.Mutex("all-z")
	ml := c.MultiLock(z, b, a)
	assert.Equal(t, "multi(all-a,all-b,all-z)", ml.Name(), "members named in the order they are taken")
	require.NoError(t, ml.Err())

	hb := locktest.MustLock(t, other.Mutex("all-b"), ctx)

	t.Run("a single attempt with one member busy holds nothing and names it", func(t *testing.T) {
		_, err := ml.TryLock(ctx, 0, 0)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		var busy *lockmw.BusyError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, "all-b", busy.Name)
		assert.Contains(t, busy.Holder, other.ID()+":")
		assertFree(t, ctx, a, z)
	})

	t.Run("a wait that ends with one member busy holds nothing and names it", func(t *testing.T) {
		_, err := ml.TryLock(ctx, 150*time.Millisecond, 0)
		var busy *lockmw.BusyError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, "all-b", busy.Name)
		assertFree(t, ctx, a, z)
	})

	t.Run("a member freed during the wait is taken with the others", func(t *testing.T) {
		got := make(chan error, 1)
		var hold context.Context
		go func() {
			var err error
			hold, err = ml.TryLock(ctx, time.Minute, 0)
			got <- err
		}()
		// The multi-lock waits on all-b holding nothing: all-a is free meanwhile.
		testsupport.Eventually(t, 10*time.Second, "the multi-lock queued on all-b", func() bool {
			n, err := srv.Client().ZCard(ctx, "rlock_queue:{all-b}").Result()
			return err == nil && n > 0
		})
		assertFree(t, ctx, a, z)
		require.NoError(t, other.Mutex("all-b").Unlock(hb))
		require.NoError(t, testsupport.Recv(t, got, 10*time.Second, "the multi-lock"))
		for _, m := range []*lockmw.Mutex{a, b, z} {
			n, err := m.HoldCount(hold)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "%s held by the multi-lock", m.Name())
		}
		require.NoError(t, ml.Unlock(hold))
		assert.ErrorIs(t, hold.Err(), context.Canceled, "the hold context ends at Unlock")
		assertFree(t, ctx, a, b, z)
		assert.ErrorIs(t, ml.Unlock(hold), lockmw.ErrNotHeld, "unlocked twice")
		assert.ErrorIs(t, ml.Unlock(ctx), lockmw.ErrNotHeld, "a context that holds nothing")
	})
}

// TestMultiLockNoDeadlock runs multi-locks over overlapping sets, given in
// opposite orders, against each other and single locks: every operation
// completes (a deadlock would hang them until the test's context ends) and
// no two holders of a name ever overlap.
func TestMultiLockNoDeadlock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	names := []string{"nd-a", "nd-b", "nd-c"}
	var inside [3]atomic.Int32
	enter := func(t *testing.T, idx ...int) {
		for _, i := range idx {
			if n := inside[i].Add(1); n != 1 {
				t.Errorf("%s held by %d at once", names[i], n)
			}
		}
	}
	leave := func(idx ...int) {
		for _, i := range idx {
			inside[i].Add(-1)
		}
	}
	sets := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0}, {2, 0}, {1}, {2}}
	const ops = 25
	var done atomic.Int32
	var wg sync.WaitGroup
	for w, set := range sets {
		c := locktest.NewOn(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			locks := make([]lockmw.Locker, len(set))
			for i, idx := range set {
				locks[i] = c.Mutex(names[idx])
			}
			var l lockmw.Locker = c.MultiLock(locks...)
			if len(set) == 1 {
				l = locks[0]
			}
			for range ops {
				err := lockmw.WithLock(ctx, l, func(context.Context) error {
					enter(t, set...)
					time.Sleep(time.Millisecond)
					leave(set...)
					return nil
				})
				if !assert.NoError(t, err, "worker %d", w) {
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, len(sets)*ops, done.Load(), "every operation completed")
}

// TestMultiLockOppositeOrders makes two multi-locks take the same two
// members in opposite orders: the same name on two servers, through Clients
// whose IDs sort the other way round, as two processes may. Neither may wait
// while it holds the other's first member, so both finish.
func TestMultiLockOppositeOrders(t *testing.T) {
	t.Parallel()
	s1, s2 := redistest.Start(t), redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var backedOff atomic.Int32
	hooks := lockmw.Hooks{AcquireEnd: func(_ context.Context, e lockmw.AcquireEndEvent) {
		if e.Kind == "multilock" && e.Waited {
			backedOff.Add(1)
		}
	}}
	mk := func(id1, id2 string) *lockmw.MultiLock {
		c1 := locktest.NewOn(t, s1, lockmw.WithClientID(id1), lockmw.WithHooks(hooks))
		c2 := locktest.NewOn(t, s2, lockmw.WithClientID(id2))
		return c1.MultiLock(c1.Mutex("opp"), c2.Mutex("opp"))
	}
	// p1 takes s1's first, p2 takes s2's first.
	p1, p2 := mk("a-p1", "b-p1"), mk("b-p2", "a-p2")
	var inside atomic.Int32
	const ops = 30
	var wg sync.WaitGroup
	var completed atomic.Int32
	for _, ml := range []*lockmw.MultiLock{p1, p2, p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range ops {
				err := lockmw.WithLock(ctx, ml, func(context.Context) error {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d multi-locks inside at once", n)
					}
					inside.Add(-1)
					return nil
				})
				if !assert.NoError(t, err) {
					return
				}
				completed.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 4*ops, completed.Load())
	t.Logf("%d of %d acquisitions found a member busy", backedOff.Load(), 4*ops)
}

func TestMultiLockMemberLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	a, b := c.Mutex("lost-a"), c.Mutex("lost-b")
	ml := c.MultiLock(a, b)
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)

	require.NoError(t, srv.Client().Del(ctx, "lost-b").Err()) // as a force-unlock does
	testsupport.Done(t, hold, 10*time.Second, "the multi-lock's hold when a member is lost")
	assert.ErrorIs(t, context.Cause(hold), lockmw.ErrLockLost)
	locked, err := a.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "the other member is held until Unlock")

	err = ml.Unlock(hold)
	assert.ErrorIs(t, err, lockmw.ErrLockLost, "Unlock reports the loss")
	assert.Contains(t, err.Error(), `"lost-b"`, "and names the member lost")
	assert.NotContains(t, err.Error(), `"lost-a"`, "not the member released")
	assertFree(t, ctx, a, b)
}

func TestMultiLockLeaseDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	a, b := c.Mutex("lease-a"), c.Mutex("lease-b")
	ml := c.MultiLock(a, b)
	start := time.Now()
	hold, err := ml.TryLock(ctx, 0, 30*time.Second)
	require.NoError(t, err)
	dl, ok := hold.Deadline()
	require.True(t, ok, "a leased hold has a deadline")
	assert.WithinRange(t, dl, start.Add(29*time.Second), time.Now().Add(30*time.Second), "the earliest member's lease end")
	for _, m := range []*lockmw.Mutex{a, b} {
		ttl, err := srv.Client().PTTL(ctx, m.Name()).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 20*time.Second, "%s taken with the lease", m.Name())
	}
	require.NoError(t, ml.Unlock(hold))
}

func TestMultiLockReentry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	a := c.Mutex("re-a")
	s := c.Semaphore("re-s", 3)
	ml := c.MultiLock(a, s)

	outer, err := ml.Lock(ctx)
	require.NoError(t, err)
	free, err := s.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, free)

	t.Run("a member re-enters through the multi-lock's hold", func(t *testing.T) {
		h, err := a.TryLock(outer, 0, 0)
		require.NoError(t, err, "no wait: a re-entry")
		n, err := a.HoldCount(h)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		require.NoError(t, a.Unlock(h))
	})

	t.Run("the multi-lock re-enters member-wise: a level of the mutex, another permit", func(t *testing.T) {
		inner, err := ml.TryLock(outer, 0, 0)
		require.NoError(t, err)
		n, err := a.HoldCount(inner)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		free, err := s.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, free, "a semaphore member takes another permit, as its own re-entry does")
		require.NoError(t, ml.Unlock(inner))
		require.NoError(t, outer.Err(), "the outer hold goes on")
		n, err = a.HoldCount(outer)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})

	require.NoError(t, ml.Unlock(outer))
	assertFree(t, ctx, a)
	free, err = s.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, free)
}

func TestMultiLockSemaphoreMember(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	a := c.Mutex("sem-a")
	ml := c.MultiLock(a, c.Semaphore("sem-s", 1))
	h, err := other.Semaphore("sem-s", 1).Lock(ctx)
	require.NoError(t, err)
	_, err = ml.TryLock(ctx, 100*time.Millisecond, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, "sem-s", busy.Name)
	assertFree(t, ctx, a)
	require.NoError(t, other.Semaphore("sem-s", 1).Unlock(h))
	hold, err := ml.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(hold))
}

func TestMultiLockTwoServers(t *testing.T) {
	t.Parallel()
	s1, s2 := redistest.Start(t), redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c1, c2 := locktest.NewOn(t, s1), locktest.NewOn(t, s2)
	a, b := c1.Mutex("two-a"), c2.Mutex("two-b")
	ml := c1.MultiLock(a, b)
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)
	for srv, key := range map[*redistest.Server]string{s1: "two-a", s2: "two-b"} {
		n, err := srv.Client().Exists(ctx, key).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "%s held on its own server", key)
	}
	require.NoError(t, ml.Unlock(hold))
	assertFree(t, ctx, a, b)

	// Busy on the second server: the first server's member is given back.
	hb := locktest.MustLock(t, locktest.NewOn(t, s2).Mutex("two-b"), ctx)
	_, err = ml.TryLock(ctx, 50*time.Millisecond, 0)
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assertFree(t, ctx, a)
	_ = hb
}

func TestMultiLockClusterSlots(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	c := locktest.New(t, cl.NewClient())
	var members []lockmw.Locker
	slots := map[int]bool{}
	for i := 0; len(slots) < 3; i++ {
		name := fmt.Sprintf("slot-%d", i)
		if s := redistest.Slot(name); !slots[s/5462] {
			slots[s/5462] = true // one name per third of the slots: one per master
			members = append(members, c.Mutex(name))
		}
	}
	ml := c.MultiLock(members...)
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)
	other := locktest.New(t, cl.NewClient())
	for _, m := range members {
		_, err := other.Mutex(m.Name()).TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "%s held", m.Name())
	}
	require.NoError(t, ml.Unlock(hold))
	for _, m := range members {
		locked, err := m.(*lockmw.Mutex).IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
	}
}

func TestMultiLockBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)

	t.Run("a nil member panics with one line naming it", func(t *testing.T) {
		assert.PanicsWithValue(t, "lockmw: MultiLock: member 2 is nil", func() { c.MultiLock(c.Mutex("x"), nil) })
		var m *lockmw.Mutex
		assert.PanicsWithValue(t, "lockmw: MultiLock: member 1 is nil", func() { c.MultiLock(m, c.Mutex("x")) })
	})

	tests := []struct {
		name string
		ml   *lockmw.MultiLock
		want error
	}{
		{"no members", c.MultiLock(), lockmw.ErrInvalidArgument},
		{"the same lock twice", c.MultiLock(c.Mutex("dup"), c.Mutex("y"), c.Mutex("dup")), lockmw.ErrInvalidArgument},
		{"a member with a bad name", c.MultiLock(c.Mutex("ok"), c.Mutex("")), lockmw.ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is an error of every call", func(t *testing.T) {
			require.ErrorIs(t, tt.ml.Err(), tt.want)
			_, err := tt.ml.Lock(ctx)
			assert.ErrorIs(t, err, tt.want)
			_, err = tt.ml.TryLock(ctx, 0, 0)
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, tt.ml.Unlock(ctx), tt.want)
			assert.ErrorIs(t, lockmw.WithLock(ctx, tt.ml, func(context.Context) error { return nil }), tt.want)
		})
	}

	t.Run("one name on two Clients, or as a mutex and a semaphore, is no duplicate", func(t *testing.T) {
		assert.NoError(t, c.MultiLock(c.Mutex("n"), other.Mutex("n")).Err())
		assert.NoError(t, c.MultiLock(c.Mutex("n"), c.Semaphore("n", 2)).Err())
	})

	t.Run("negative wait or lease", func(t *testing.T) {
		ml := c.MultiLock(c.Mutex("neg"))
		_, err := ml.TryLock(ctx, -1, 0)
		assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
		_, err = ml.TryLock(ctx, 0, -1)
		assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	})

	t.Run("a nil *MultiLock in the decorators", func(t *testing.T) {
		var ml *lockmw.MultiLock
		assert.ErrorIs(t, lockmw.WithLock(ctx, ml, func(context.Context) error { return nil }), lockmw.ErrInvalidArgument)
	})
}

func TestMultiLockDecorators(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	a, b := c.Mutex("deco-a"), c.Mutex("deco-b")
	ml := c.MultiLock(a, b)

	t.Run("WithLock runs fn holding every member, re-entering through its context", func(t *testing.T) {
		err := lockmw.WithLock(ctx, ml, func(hctx context.Context) error {
			return lockmw.WithLock(hctx, b, func(hctx context.Context) error {
				n, err := b.HoldCount(hctx)
				if err == nil && n != 2 {
					err = fmt.Errorf("hold count %d, want 2", n)
				}
				return err
			})
		})
		require.NoError(t, err)
		assertFree(t, ctx, a, b)
	})

	t.Run("Do returns fn's result", func(t *testing.T) {
		v, err := lockmw.Do(ctx, ml, func(context.Context) (int, error) { return 42, nil })
		require.NoError(t, err)
		assert.Equal(t, 42, v)
	})

	t.Run("WithMinHold keeps every member until the minimum hold ends", func(t *testing.T) {
		start := time.Now()
		require.NoError(t, lockmw.WithLock(ctx, ml, func(context.Context) error { return nil }, lockmw.WithMinHold(10*time.Second)))
		assert.Less(t, time.Since(start), 5*time.Second, "UnlockAt: the call returns at once")
		for _, m := range []*lockmw.Mutex{a, b} {
			ttl, err := srv.Client().PTTL(ctx, m.Name()).Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, 5*time.Second, "%s left to expire", m.Name())
			_, err = m.ForceUnlock(ctx)
			require.NoError(t, err)
		}
	})

	t.Run("a member lost while fn runs is a HoldError", func(t *testing.T) {
		c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
		ml := c.MultiLock(c.Mutex("deco-lost-a"), c.Mutex("deco-lost-b"))
		err := lockmw.WithLock(ctx, ml, func(hctx context.Context) error {
			if err := srv.Client().Del(ctx, "deco-lost-a").Err(); err != nil {
				return err
			}
			return testsupport.WaitDone(hctx, 10*time.Second)
		})
		var he *lockmw.HoldError
		require.ErrorAs(t, err, &he)
		assert.ErrorIs(t, he.Lost, lockmw.ErrLockLost)
		assert.Equal(t, ml.Name(), he.Name)
	})

	t.Run("WithAcquireContext", func(t *testing.T) {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, lockmw.WithLock(ctx, ml, func(context.Context) error { return nil }, lockmw.WithAcquireContext(actx)))
		assertFree(t, ctx, a, b)
	})
}

func TestMultiLockHooks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var mu sync.Mutex
	var events []string
	note := func(what string, info lockmw.LockInfo) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s %s %s %s", what, info.Kind, info.Name, info.Group))
	}
	hooks := lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			note("acquire-start", e.LockInfo)
			return ctx
		},
		AcquireEnd: func(_ context.Context, e lockmw.AcquireEndEvent) { note("acquire-end", e.LockInfo) },
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			note("hold-start", e.LockInfo)
			return ctx
		},
		HoldEnd: func(_ context.Context, e lockmw.HoldEndEvent) { note("hold-end", e.LockInfo) },
	}
	c := locktest.NewOn(t, srv, lockmw.WithHooks(hooks))
	ml := c.MultiLock(c.Mutex("hk-b", lockmw.WithGroup("B")), c.Mutex("hk-a"))
	require.NoError(t, lockmw.WithLock(ctx, ml, func(context.Context) error { return nil }))
	assert.Equal(t, []string{
		"acquire-start multilock multi(hk-a,hk-b) multi(hk-a,B)",
		"acquire-start mutex hk-a ",
		"hold-start mutex hk-a ",
		"acquire-end mutex hk-a ",
		"acquire-start mutex hk-b B",
		"hold-start mutex hk-b B",
		"acquire-end mutex hk-b B",
		"hold-start multilock multi(hk-a,hk-b) multi(hk-a,B)",
		"acquire-end multilock multi(hk-a,hk-b) multi(hk-a,B)",
		"hold-end mutex hk-b B",
		"hold-end mutex hk-a ",
		"hold-end multilock multi(hk-a,hk-b) multi(hk-a,B)",
	}, events)

	// A re-entry is reported as an acquisition, and is no new hold.
	outer, err := ml.Lock(ctx)
	require.NoError(t, err)
	mu.Lock()
	events = nil
	mu.Unlock()
	inner, err := ml.Lock(outer)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(inner))
	mu.Lock()
	var multi []string
	for _, e := range events {
		if strings.Contains(e, "multilock") {
			multi = append(multi, e)
		}
	}
	mu.Unlock()
	assert.Equal(t, []string{
		"acquire-start multilock multi(hk-a,hk-b) multi(hk-a,B)",
		"acquire-end multilock multi(hk-a,hk-b) multi(hk-a,B)",
	}, multi, "a re-entry: no hold-start, no hold-end")
	require.NoError(t, ml.Unlock(outer))
}

// TestMultiLockCloseEndsHold: closing a member's Client ends the
// multi-lock's hold with ErrClosed.
func TestMultiLockCloseEndsHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	other := lockmw.New(srv.NewClient())
	ml := c.MultiLock(c.Mutex("close-a"), other.Mutex("close-b"))
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, other.Close())
	testsupport.Done(t, hold, 10*time.Second, "the hold when a member's Client closes")
	assert.ErrorIs(t, context.Cause(hold), lockmw.ErrClosed)
	err = ml.Unlock(hold)
	assert.False(t, errors.Is(err, lockmw.ErrNotHeld), "Unlock releases what is left: %v", err)
	assertFree(t, ctx, c.Mutex("close-a"))
}

// foreignLocker is a Locker of another package: a mutex behind a type
// lockmw does not know (no UnlockAt, no Client).
type foreignLocker struct{ m *lockmw.Mutex }

func (f foreignLocker) Lock(ctx context.Context) (context.Context, error) { return f.m.Lock(ctx) }
func (f foreignLocker) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return f.m.TryLock(ctx, wait, lease)
}
func (f foreignLocker) Unlock(hold context.Context) error { return f.m.Unlock(hold) }
func (f foreignLocker) Name() string                      { return f.m.Name() }

func TestMultiLockForeignMember(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	a, b := c.Mutex("foreign-a"), c.Mutex("foreign-b")
	f := foreignLocker{b}

	assert.ErrorIs(t, c.MultiLock(f, a, f).Err(), lockmw.ErrInvalidArgument, "the same Locker value twice")

	ml := c.MultiLock(f, a)
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)
	n, err := b.HoldCount(hold)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the foreign member is held")
	require.NoError(t, ml.Unlock(hold))
	assertFree(t, ctx, a, b)

	t.Run("WithMinHold keeps a foreign member until the minimum hold ends, then releases it", func(t *testing.T) {
		start := time.Now()
		const minHold = 300 * time.Millisecond
		require.NoError(t, lockmw.WithLock(ctx, ml, func(context.Context) error { return nil }, lockmw.WithMinHold(minHold)))
		assert.GreaterOrEqual(t, time.Since(start), minHold, "UnlockAt waited for the foreign member")
		assertFree(t, ctx, b)
	})
}

func TestMultiLockUnlockRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	var fail locktest.FailHook
	rdb := srv.NewClient()
	rdb.AddHook(&fail)
	broken := locktest.New(t, rdb)
	a, b := c.Mutex("retry-a"), broken.Mutex("retry-b")
	ml := c.MultiLock(a, b)
	hold, err := ml.Lock(ctx)
	require.NoError(t, err)

	fail.On.Store(true)
	err = ml.Unlock(hold)
	require.ErrorIs(t, err, locktest.ErrInjected)
	assert.Contains(t, err.Error(), `"retry-b"`, "the error names the member")
	assert.ErrorIs(t, hold.Err(), context.Canceled, "the hold context ends at the first Unlock")
	assertFree(t, ctx, a)

	fail.On.Store(false)
	require.NoError(t, ml.Unlock(hold), "a second Unlock releases what is left")
	assertFree(t, ctx, a, b)
	assert.ErrorIs(t, ml.Unlock(hold), lockmw.ErrNotHeld)
}

func TestMultiLockContextEndsWait(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	a, b := c.Mutex("ctx-a"), c.Mutex("ctx-b")
	hb := locktest.MustLock(t, other.Mutex("ctx-b"), ctx)
	defer func() { _ = other.Mutex("ctx-b").Unlock(hb) }()

	wctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := c.MultiLock(a, b).Lock(wctx)
		got <- err
	}()
	testsupport.Eventually(t, 10*time.Second, "the multi-lock queued on ctx-b", func() bool {
		n, err := srv.Client().ZCard(ctx, "rlock_queue:{ctx-b}").Result()
		return err == nil && n > 0
	})
	cancel()
	err := testsupport.Recv(t, got, 10*time.Second, "the multi-lock's Lock")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assertFree(t, ctx, a)
}
