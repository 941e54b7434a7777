package lockmw_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
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

// fairTurns is lib.lua's rlockFairTurns: the most hand-offs in a row to rlock
// waiters while a Redisson waiter waits.
const fairTurns = 3

// fairSide is one topology of TestFairToRedissonWaiters: how to make the
// rlock and Redisson-protocol clients, and count the subscribers of a
// channel where the scripts count them.
type fairSide struct {
	rlock    func(t *testing.T) (*lockmw.Client, redis.UniversalClient)
	redisson func(t *testing.T) *redisson.Client
	numSub   func(ctx context.Context, channels ...string) (map[string]int64, error)
}

// TestFairToRedissonWaiters checks the structural bound: while a
// Redisson-protocol waiter waits, at most fairTurns hand-offs in a row go to
// rlock waiters before a release opens the lock to everyone (each rlock
// holder reads its hold's "rlock:handoffs"), and every Redisson waiter gets
// the lock while rlock clients contend.
func TestFairToRedissonWaiters(t *testing.T) {
	t.Parallel()
	single := func(t *testing.T) fairSide {
		srv := redistest.Start(t)
		return fairSide{
			rlock: func(t *testing.T) (*lockmw.Client, redis.UniversalClient) {
				rdb := srv.NewClient()
				return locktest.New(t, rdb), rdb
			},
			redisson: func(t *testing.T) *redisson.Client {
				c := redisson.NewClient(srv.NewClient())
				t.Cleanup(func() { _ = c.Close() })
				return c
			},
			numSub: func(ctx context.Context, channels ...string) (map[string]int64, error) {
				return srv.Client().PubSubNumSub(ctx, channels...).Result()
			},
		}
	}
	cluster := func(t *testing.T) fairSide {
		cl := redistest.StartCluster(t, 3, 0)
		return fairSide{
			rlock: func(t *testing.T) (*lockmw.Client, redis.UniversalClient) {
				rdb := cl.NewClient()
				return locktest.New(t, rdb), rdb
			},
			redisson: func(t *testing.T) *redisson.Client {
				c := redisson.NewShardedClient(cl.NewClient())
				t.Cleanup(func() { _ = c.Close() })
				return c
			},
			numSub: func(ctx context.Context, channels ...string) (map[string]int64, error) {
				node, err := cl.Client().MasterForKey(ctx, "fair")
				if err != nil {
					return nil, err
				}
				return node.PubSubShardNumSub(ctx, channels...).Result()
			},
		}
	}
	for _, tc := range []struct {
		name  string
		side  func(t *testing.T) fairSide
		rlock int
		redis int
	}{
		{"one Redisson waiter beside two rlock clients on a single node", single, 2, 1},
		{"two Redisson waiters beside four rlock clients on a single node", single, 4, 2},
		{"two Redisson waiters beside three rlock clients on a cluster (sharded channels)", cluster, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkFair(t, tc.side(t), tc.rlock, tc.redis)
		})
	}
}

// checkFair runs n rlock workers (lock, read the hand-off count, hold 1ms,
// unlock) on one name while m Redisson-protocol processes each wait once for
// it, for at most 2s.
func checkFair(t *testing.T, side fairSide, n, m int) {
	const name = "fair"
	ctx := testsupport.Ctx(t)
	clients := make([]*lockmw.Client, n)
	rdbs := make([]redis.UniversalClient, n)
	for i := range clients {
		clients[i], rdbs[i] = side.rlock(t)
	}
	first := locktest.MustLock(t, clients[0].Mutex(name), ctx)

	// The Redisson processes wait, one thread each, from before T to their
	// hold: between T and the last one's hold, one at least is subscribed.
	runCtx, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	var redissonDone sync.WaitGroup
	var mu sync.Mutex
	var lastRedisson time.Time
	redissonErrs := make(chan error, m)
	for range m {
		rc := side.redisson(t)
		redissonDone.Add(1)
		go func() {
			defer redissonDone.Done()
			l := rc.GetLock(name)
			if err := l.Lock(runCtx, 1, 0); err != nil {
				redissonErrs <- err
				return
			}
			mu.Lock()
			lastRedisson = time.Now()
			mu.Unlock()
			time.Sleep(time.Millisecond)
			redissonErrs <- l.Unlock(context.WithoutCancel(ctx), 1)
		}()
	}
	channel, rollCall := redisson.Channel(name), "rlock_handoff:{"+name+"}"
	testsupport.Eventually(t, 30*time.Second, "the Redisson waiters subscribed", func() bool { // a hang guard
		subs, err := side.numSub(ctx, channel, rollCall)
		return err == nil && subs[channel]-subs[rollCall] == int64(m)
	})
	since := time.Now() // T

	// A hold observed: its Lock call's start, its return, its hand-off
	// count, whether the name was quiet (its release would not reserve).
	type seen struct {
		start, end time.Time
		handoffs   int64
		quiet      bool
	}
	var holds []seen
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mx := clients[i].Mutex(name)
			for runCtx.Err() == nil {
				var h context.Context
				var err error
				start := time.Now()
				if i == 0 && first != nil {
					h, first = first, nil
				} else if h, err = mx.Lock(runCtx); err != nil {
					assert.Error(t, runCtx.Err(), "Lock fails only when the run ends: %v", err)
					return
				}
				end := time.Now()
				k, quiet, err := readHold(ctx, rdbs[i], name)
				assert.NoError(t, err)
				mu.Lock()
				holds = append(holds, seen{start, end, k, quiet})
				mu.Unlock()
				time.Sleep(time.Millisecond)
				assert.NoError(t, mx.Unlock(h))
			}
		}()
	}
	go func() { redissonDone.Wait(); stop() }()
	wg.Wait()
	redissonDone.Wait()
	for range m {
		require.NoError(t, <-redissonErrs, "every Redisson waiter gets the lock within 2s")
	}
	// A hold reached by more than fairTurns hand-offs came from a release
	// that did not reserve the lock: allowed only while the name was quiet
	// (a reservation nobody used in its window, which a loaded machine can
	// cause), as the hold before it saw.
	slices.SortFunc(holds, func(a, b seen) int { return a.end.Compare(b.end) })
	var observed, handedOver, quiet int
	for i, s := range holds {
		if s.start.Before(since) || !s.end.Before(lastRedisson) {
			continue // not wholly while a Redisson waiter waited
		}
		observed++
		if s.handoffs > 0 {
			handedOver++
		}
		if i > 0 && holds[i-1].quiet {
			quiet++
			continue
		}
		assert.LessOrEqual(t, s.handoffs, int64(fairTurns), "hand-offs in a row while a Redisson waiter waits")
	}
	t.Logf("%d rlock holds while Redisson waited, %d of them handed over, %d after a quiet one", observed, handedOver, quiet)
}

// TestReservingRelease checks the rule of one release beside Redisson's
// waiters, on loopback: a hold reached by fairTurns hand-offs in a row is
// handed over again only when no Redisson waiter is subscribed; with one,
// the release frees the lock, keeps the queue and reserves the lock for
// Redisson's waiters until one of them used it, or until the window passes
// (after which the name is quiet for a while).
func TestReservingRelease(t *testing.T) {
	t.Parallel()
	t.Run("without a Redisson subscriber the lock is handed over", func(t *testing.T) {
		t.Parallel()
		r := newReleaseCase(t)
		r.release(t)
		hb := testsupport.Recv(t, r.got, reservePatience, "the rlock waiter got the lock")
		assert.Equal(t, "4", r.handoffs(t), "hand-offs in a row that led to b's hold")
		require.NoError(t, r.b.Unlock(hb))
	})
	t.Run("a subscriber that never takes the reserved lock holds it up for the window, then the name is quiet", func(t *testing.T) {
		t.Parallel()
		r := newReleaseCase(t)
		sub := r.subscribe(t, r.channel) // a Redisson process that never acquires
		called := time.Now()
		r.release(t)
		msg, err := sub.ReceiveMessage(r.ctx)
		require.NoError(t, err)
		assert.Equal(t, "0", msg.Payload, "a reserving release publishes Redisson's unlock message")
		hb := testsupport.Recv(t, r.got, reservePatience, "the rlock waiter got the lock after the window")
		assert.GreaterOrEqual(t, time.Since(called), reserveWindowMin, "the lock was reserved for the window")
		assert.Empty(t, r.handoffs(t), "a lock taken after a reservation starts a new run of hand-offs")
		quiet, err := r.srv.Client().HGet(r.ctx, r.table, "rlock:quiet").Result()
		require.NoError(t, err, "a reservation nobody used makes the name quiet")
		assert.Contains(t, quiet, "|")
		require.NoError(t, r.b.Unlock(hb))
	})
	t.Run("a Redisson thread takes the reserved lock, then the rlock waiter", func(t *testing.T) {
		t.Parallel()
		r := newReleaseCase(t)
		rc := redisson.NewClient(r.srv.NewClient())
		t.Cleanup(func() { _ = rc.Close() })
		l := rc.GetLock(r.name)
		redissonGot := make(chan error, 1)
		go func() { redissonGot <- l.Lock(r.ctx, 1, 0) }()
		r.waitSubscribers(t, 1)
		r.release(t)
		require.NoError(t, testsupport.Recv(t, redissonGot, reservePatience, "the Redisson thread got the reserved lock"))
		select {
		case <-r.got:
			t.Fatal("the rlock waiter got the lock while the Redisson thread held it")
		default:
		}
		require.NoError(t, l.Unlock(r.ctx, 1))
		hb := testsupport.Recv(t, r.got, reservePatience, "the rlock waiter got the lock after the Redisson thread")
		open, err := r.srv.Client().HExists(r.ctx, r.table, "rlock:open").Result()
		require.NoError(t, err)
		assert.False(t, open, "the reservation ended when used")
		require.NoError(t, r.b.Unlock(hb))
	})
}

// TestReservingReleaseWithNobodyQueued checks that a release with nobody
// queued reserves the lock too while a Redisson waiter waits, even from the
// short release of an uncontended hold, and the order of its messages: "0"
// on Redisson's channel, then the reservation's generation on the roll-call
// channel, which a subscriber of both (an rlock client) receives in that
// order.
func TestReservingReleaseWithNobodyQueued(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name = "reserve-free"
	channel, rollCall := redisson.Channel(name), "rlock_handoff:{"+name+"}"
	m := locktest.NewOn(t, srv).Mutex(name)
	h := locktest.MustLock(t, m, ctx) // the fast path: RESTORE
	phantom := srv.NewClient().Subscribe(ctx, channel)
	t.Cleanup(func() { _ = phantom.Close() })
	_, err := phantom.Receive(ctx)
	require.NoError(t, err)
	observer := srv.NewClient().Subscribe(ctx, channel, rollCall) // counted as an rlock client
	t.Cleanup(func() { _ = observer.Close() })
	for range 2 {
		_, err := observer.Receive(ctx)
		require.NoError(t, err)
	}

	released := time.Now()
	require.NoError(t, m.Unlock(h))
	first, err := observer.ReceiveMessage(ctx)
	require.NoError(t, err)
	second, err := observer.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, [2]string{channel, "0"}, [2]string{first.Channel, first.Payload}, "Redisson's unlock message first")
	assert.Equal(t, rollCall, second.Channel, "then the reservation's generation")
	gen, err := srv.Client().HGet(ctx, "rlock_waiters:{"+name+"}", "rlock:opengen").Result()
	if errors.Is(err, redis.Nil) {
		// The reservation's window (20 ms at least) ran out before we read
		// it: a loaded machine. Only then may it be gone.
		require.Greater(t, time.Since(released), 20*time.Millisecond, "the reservation was recorded")
		return
	}
	require.NoError(t, err)
	assert.Equal(t, second.Payload, strings.Split(gen, "|")[0], "the generation recorded with the reservation")
}

// releaseCase is a hold of a reached by fairTurns hand-offs in a row, and an
// rlock waiter b queued behind it, on a server of its own.
type releaseCase struct {
	srv                            *redistest.Server
	ctx                            context.Context
	name, channel, rollCall, table string
	a, b                           *lockmw.Mutex
	ha                             context.Context
	got                            chan context.Context // b's hold
}

func newReleaseCase(t *testing.T) *releaseCase {
	srv := redistest.Start(t)
	r := &releaseCase{srv: srv, ctx: testsupport.Ctx(t), name: "reserve", got: make(chan context.Context, 1)}
	r.channel, r.rollCall, r.table = redisson.Channel(r.name), "rlock_handoff:{"+r.name+"}", "rlock_waiters:{"+r.name+"}"
	r.a, r.b = locktest.NewOn(t, srv).Mutex(r.name), locktest.NewOn(t, srv).Mutex(r.name)
	r.ha = locktest.MustLock(t, r.a, r.ctx)
	// As if ha had been handed over fairTurns times in a row.
	require.NoError(t, srv.Client().HSet(r.ctx, r.name, "rlock:handoffs", fairTurns).Err())
	go func() {
		h, err := r.b.Lock(r.ctx)
		assert.NoError(t, err)
		r.got <- h
	}()
	testsupport.Eventually(t, reservePatience, "b queued and subscribed", func() bool {
		q, _ := srv.Client().ZCard(r.ctx, "rlock_queue:{"+r.name+"}").Result()
		subs, _ := srv.Client().PubSubNumSub(r.ctx, r.rollCall).Result()
		return q == 1 && subs[r.rollCall] == 1
	})
	return r
}

// subscribe subscribes a connection of its own to channel.
func (r *releaseCase) subscribe(t *testing.T, channel string) *redis.PubSub {
	sub := r.srv.NewClient().Subscribe(r.ctx, channel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(r.ctx)
	require.NoError(t, err)
	r.waitSubscribers(t, 1)
	return sub
}

// waitSubscribers waits until n subscribers of Redisson's channel are not
// rlock clients.
func (r *releaseCase) waitSubscribers(t *testing.T, n int64) {
	testsupport.Eventually(t, reservePatience, "the Redisson subscribers", func() bool {
		subs, err := r.srv.Client().PubSubNumSub(r.ctx, r.channel, r.rollCall).Result()
		return err == nil && subs[r.channel]-subs[r.rollCall] == n
	})
}

// release unlocks a's hold.
func (r *releaseCase) release(t *testing.T) { require.NoError(t, r.a.Unlock(r.ha)) }

// handoffs is the lock's rlock:handoffs, "" when it has none.
func (r *releaseCase) handoffs(t *testing.T) string {
	n, err := r.srv.Client().HGet(r.ctx, r.name, "rlock:handoffs").Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err)
	return n
}
