package lockmw_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limitChecker counts the holders of one limit at once.
type limitChecker struct {
	now, max atomic.Int64
}

// enter records a holder and reports the count.
func (l *limitChecker) enter() int64 {
	n := l.now.Add(1)
	for {
		m := l.max.Load()
		if n <= m || l.max.CompareAndSwap(m, n) {
			return n
		}
	}
}

func (l *limitChecker) leave() { l.now.Add(-1) }

// Across Clients, never more than the permits are held at once, and every
// permit comes back.
func TestSemaphoreLimit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var lim limitChecker
	var wg sync.WaitGroup
	for range 3 {
		c := locktest.NewOn(t, srv)
		for range 4 {
			wg.Go(func() {
				s := c.Semaphore("sem-limit", 2)
				for range 10 {
					p, err := s.Lock(ctx)
					if !assert.NoError(t, err) {
						return
					}
					assert.LessOrEqual(t, lim.enter(), int64(2), "more holders than permits")
					time.Sleep(time.Millisecond) // the work done with a permit
					lim.leave()
					assert.NoError(t, s.Unlock(p))
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, int64(2), lim.max.Load(), "both permits were used at once")
	n, err := locktest.NewOn(t, srv).Semaphore("sem-limit", 2).Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "every permit is back")
	ttl := srv.Client().PTTL(ctx, "sem-limit").Val()
	assert.Greater(t, ttl, time.Hour, "an idle count expires, after a day")
}

// A released permit goes to the queued waiter: it acquires without polling,
// with one attempt (the one that queued it).
func TestSemaphoreHandOff(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := locktest.NewOn(t, srv)
	rdb := srv.NewClient()
	var attempts atomic.Int64
	rdb.AddHook(countScripts{&attempts})
	b := locktest.New(t, rdb)
	sa, sb := a.Semaphore("sem-handoff", 1), b.Semaphore("sem-handoff", 1)
	round := func() {
		pa, err := sa.Lock(ctx)
		require.NoError(t, err)
		got := make(chan context.Context, 1)
		go func() {
			pb, err := sb.Lock(ctx)
			assert.NoError(t, err)
			got <- pb
		}()
		testsupport.Eventually(t, 10*time.Second, "b queued", func() bool {
			return srv.Client().ZCard(ctx, "rlock_queue:{sem-handoff}").Val() == 1
		})
		attempts.Store(0)
		require.NoError(t, sa.Unlock(pa))
		pb := testsupport.Recv(t, got, 10*time.Second, "the hand-off")
		require.NoError(t, sb.Unlock(pb))
	}
	round() // subscribes b's client
	round()
	// After it was queued: its release only (a short hold is not claimed), no attempt.
	assert.LessOrEqual(t, attempts.Load(), int64(1), "b's client sent no attempt after the release")
}

// Bad input: a bad name, fewer than one permit, on one Redis and on a
// quorum Client.
func TestSemaphoreBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	quorum := lockmw.NewQuorum([]redis.UniversalClient{srv.NewClient()})
	t.Cleanup(func() { _ = quorum.Close() })
	for _, tc := range []struct {
		s    *lockmw.Semaphore
		want error
	}{
		{c.Semaphore("", 1), lockmw.ErrInvalidName},
		{c.Semaphore("ok", 0), lockmw.ErrInvalidArgument},
		{c.Semaphore("ok", -3), lockmw.ErrInvalidArgument},
		{quorum.Semaphore("", 1), lockmw.ErrInvalidName},
		{quorum.Semaphore("ok", 0), lockmw.ErrInvalidArgument},
	} {
		assert.ErrorIs(t, tc.s.Err(), tc.want)
		_, err := tc.s.Lock(ctx)
		assert.ErrorIs(t, err, tc.want)
		_, err = tc.s.TryLock(ctx, 0, time.Second)
		assert.ErrorIs(t, err, tc.want)
		_, err = tc.s.Available(ctx)
		assert.ErrorIs(t, err, tc.want)
		assert.ErrorIs(t, tc.s.Unlock(ctx), tc.want)
	}
	_, err := c.Semaphore("ok", 1).TryLock(ctx, -1, 0)
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, c.Semaphore("ok", 1).Unlock(ctx), lockmw.ErrNotHeld)
}

// Two Clients that disagree on the permits: the first setting wins.
func TestSemaphoreFirstSettingWins(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	s2 := locktest.NewOn(t, srv).Semaphore("sem-first", 2)
	p, err := s2.Lock(ctx)
	require.NoError(t, err)
	s5 := locktest.NewOn(t, srv).Semaphore("sem-first", 5)
	n, err := s5.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "2 permits, one out: the first setting")
	q, err := s5.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	_, err = s5.TryLock(ctx, 0, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy, "a third permit of two")
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.Greater(t, busy.TTL, time.Duration(0), "the earliest permit's TTL")
	require.NoError(t, s2.Unlock(p))
	require.NoError(t, s5.Unlock(q))
}

// A permit found gone by the watchdog cancels its context with
// ErrLockLost; a leased permit that nobody gives back returns when it
// expires.
func TestSemaphorePermitLostAndExpired(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(1500*time.Millisecond))
	s := c.Semaphore("sem-lost", 1)
	p, err := s.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, srv.Client().Del(ctx, "{sem-lost}:timeout").Err())
	testsupport.Done(t, p, 10*time.Second, "the lost permit's context")
	assert.ErrorIs(t, context.Cause(p), lockmw.ErrLockLost)
	assert.ErrorIs(t, s.Unlock(p), lockmw.ErrLockLost)

	e := c.Semaphore("sem-expired", 1)
	_, err = e.TryLock(ctx, 0, 300*time.Millisecond) // never given back
	require.NoError(t, err)
	other := locktest.NewOn(t, srv).Semaphore("sem-expired", 1)
	q, err := other.TryLock(ctx, 10*time.Second, 0)
	require.NoError(t, err, "the expired permit came back")
	require.NoError(t, other.Unlock(q))
}

// rlock and Redisson-protocol clients share one limit: both sides get
// permits and the limit holds.
func TestSemaphoreBesideRedisson(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name, permits = "sem-redisson", 2
	var lim limitChecker
	var rlockHolds, redissonHolds atomic.Int64
	var wg sync.WaitGroup
	for i := range 3 {
		c := locktest.NewOn(t, srv)
		rs := redisson.NewClient(srv.NewClient()).GetPermitExpirableSemaphore(name)
		if i == 0 {
			_, err := rs.TrySetPermits(ctx, permits) // as a Java service does before acquiring
			require.NoError(t, err)
		}
		wg.Go(func() {
			s := c.Semaphore(name, permits)
			for range 15 {
				p, err := s.Lock(ctx)
				if !assert.NoError(t, err) {
					return
				}
				assert.LessOrEqual(t, lim.enter(), int64(permits))
				rlockHolds.Add(1)
				time.Sleep(time.Millisecond)
				lim.leave()
				assert.NoError(t, s.Unlock(p))
			}
		})
		wg.Go(func() {
			for range 15 {
				id, err := rs.Acquire(ctx, 10*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				assert.LessOrEqual(t, lim.enter(), int64(permits))
				redissonHolds.Add(1)
				time.Sleep(time.Millisecond)
				lim.leave()
				assert.NoError(t, rs.Release(ctx, id))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(45), rlockHolds.Load())
	assert.Equal(t, int64(45), redissonHolds.Load())
	n, err := locktest.NewOn(t, srv).Semaphore(name, permits).Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, permits, n, "every permit is back")
}

// The decorators take a Semaphore: fn runs with one permit; Wrap with
// WithPermits makes each key a semaphore; nil lockers and bad permits are
// call-time errors.
func TestSemaphoreDecorators(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)

	var lim limitChecker
	work := func(ctx context.Context, key string) (int, error) {
		defer lim.leave()
		n := lim.enter()
		time.Sleep(2 * time.Millisecond) // the work done with a permit
		return int(n), nil
	}
	export := lockmw.Wrap(c, func(key string) string { return "export:" + key }, work, lockmw.WithPermits(2))
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			n, err := export(ctx, "tenant-1")
			assert.NoError(t, err)
			assert.LessOrEqual(t, n, 2, "at most two exports of one tenant at once")
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, lim.max.Load(), int64(2))

	// WithLock on a semaphore, and its minimum hold (UnlockAt).
	s := c.Semaphore("sem-withlock", 1)
	require.NoError(t, lockmw.WithLock(ctx, s, func(ctx context.Context) error {
		_, err := s.TryLock(ctx, 0, 0) // not reentrant: a second permit of one
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
		return nil
	}, lockmw.WithMinHold(time.Hour)))
	_, err := s.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "kept for the minimum hold")

	var nilSem *lockmw.Semaphore
	assert.ErrorIs(t, lockmw.WithLock(ctx, nilSem, func(context.Context) error { return nil }), lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, lockmw.WithLock(ctx, nil, func(context.Context) error { return nil }), lockmw.ErrInvalidArgument)
	_, err = lockmw.Do(ctx, nilSem, func(context.Context) (int, error) { return 1, nil })
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	bad := lockmw.Wrap(c, nil, work, lockmw.WithPermits(0))
	_, err = bad(ctx, "x")
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
}

// On a 3-master cluster (sharded pub/sub): the limit holds across Clients,
// a released permit is handed to a waiter, and names in different slots
// are different semaphores.
func TestSemaphoreCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	clients := []*lockmw.Client{locktest.New(t, cl.NewClient()), locktest.New(t, cl.NewClient()), locktest.New(t, cl.NewClient())}
	for _, name := range []string{"sem-cluster-a", "sem-cluster-b", "{tenant-9}:exports"} {
		var lim limitChecker
		var wg sync.WaitGroup
		for _, c := range clients {
			for range 3 {
				wg.Go(func() {
					s := c.Semaphore(name, 2)
					for range 5 {
						p, err := s.Lock(ctx)
						if !assert.NoError(t, err, name) {
							return
						}
						assert.LessOrEqual(t, lim.enter(), int64(2), name)
						time.Sleep(time.Millisecond)
						lim.leave()
						assert.NoError(t, s.Unlock(p))
					}
				})
			}
		}
		wg.Wait()
		n, err := clients[0].Semaphore(name, 2).Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, n, name)
	}
}

// Redisson waiters are not starved by rlock waiters that keep the queue
// busy: while one waits, at most three hand-offs in a row go to rlock
// waiters, then a permit goes back to the count and is published, and the
// Redisson waiter takes it. Without that rule it would wait for the
// earliest permit's expiry (the watchdog timeout, 30 s) and find it taken.
func TestSemaphoreFairToRedissonWaiters(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name = "sem-fair"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		s := locktest.NewOn(t, srv).Semaphore(name, 1)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := s.Lock(ctx)
				if !assert.NoError(t, err) {
					return
				}
				time.Sleep(time.Millisecond)
				assert.NoError(t, s.Unlock(p))
			}
		})
	}
	rs := redisson.NewClient(srv.NewClient()).GetPermitExpirableSemaphore(name)
	testsupport.Eventually(t, 10*time.Second, "rlock clients contend", func() bool {
		return srv.Client().Exists(ctx, "rlock_queue:{"+name+"}").Val() == 1
	})
	for i := range 5 {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second) // well before the 30 s watchdog expiry
		start := time.Now()
		id, err := rs.Acquire(actx, 10*time.Second)
		cancel()
		require.NoError(t, err, "Redisson acquisition %d while rlock clients contend", i)
		t.Logf("Redisson waiter %d got a permit after %v", i, time.Since(start))
		time.Sleep(time.Millisecond)
		require.NoError(t, rs.Release(ctx, id))
	}
	close(stop)
	wg.Wait()
}

// The keys and messages are Redisson's: the count at name, the permits in
// {name}:timeout scored by expiry in ms, and the count of free permits
// published on redisson_sc:{name} when a permit goes back.
func TestSemaphoreWire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	admin := srv.Client()
	sub := admin.Subscribe(ctx, "redisson_sc:{sem-wire}")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription is in place
	require.NoError(t, err)

	c := locktest.NewOn(t, srv)
	s := c.Semaphore("sem-wire", 3)
	before := time.Now()
	p, err := s.Lock(ctx)
	require.NoError(t, err)
	after := time.Now()
	assert.Equal(t, "2", admin.Get(ctx, "sem-wire").Val(), "the count of free permits")
	assert.Equal(t, time.Duration(-1), admin.PTTL(ctx, "sem-wire").Val(), "no TTL while a permit is out")
	members := admin.ZRangeWithScores(ctx, "{sem-wire}:timeout", 0, -1).Val()
	require.Len(t, members, 1)
	assert.Regexp(t, `^.+:\d+$`, members[0].Member, "the holder's field")
	expiry := time.UnixMilli(int64(members[0].Score))
	assert.False(t, expiry.Before(before.Add(lockmw.DefaultWatchdogTimeout-time.Second)), "expiry: now + the watchdog timeout, in ms")
	assert.False(t, expiry.After(after.Add(lockmw.DefaultWatchdogTimeout+time.Second)))

	require.NoError(t, s.Unlock(p))
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "3", msg.Payload, "the count after the release, as Redisson publishes it")
	assert.Equal(t, int64(0), admin.Exists(ctx, "{sem-wire}:timeout").Val())
	assert.Greater(t, admin.PTTL(ctx, "sem-wire").Val(), 23*time.Hour, "idle: the count expires after a day")
}

// The hooks' events say a permit is one: Permits is the semaphore's limit
// (0 for a mutex).
func TestSemaphoreHookEvents(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var mu sync.Mutex
	seen := map[string]int{}
	note := func(what string, permits int) {
		mu.Lock()
		defer mu.Unlock()
		seen[what] = permits
	}
	hooks := lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			note("acquire-start "+e.Name, e.Permits)
			return ctx
		},
		AcquireEnd: func(_ context.Context, e lockmw.AcquireEndEvent) { note("acquire-end "+e.Name, e.Permits) },
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			note("hold-start "+e.Name, e.Permits)
			return ctx
		},
		HoldEnd: func(_ context.Context, e lockmw.HoldEndEvent) { note("hold-end "+e.Name, e.Permits) },
	}
	c := locktest.NewOn(t, srv, lockmw.WithHooks(hooks))
	require.NoError(t, lockmw.WithLock(ctx, c.Semaphore("hooked-sem", 3), func(context.Context) error { return nil }))
	require.NoError(t, lockmw.WithLock(ctx, c.Mutex("hooked-mutex"), func(context.Context) error { return nil }))
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range []string{"acquire-start", "acquire-end", "hold-start", "hold-end"} {
		assert.Equal(t, 3, seen[ev+" hooked-sem"], ev)
		assert.Equal(t, 0, seen[ev+" hooked-mutex"], ev)
	}
}
