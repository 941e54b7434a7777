package lockmw_test

import (
	"context"
	"errors"
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
	testsupport.Eventually(t, 5*time.Second, "the Redisson waiters subscribed", func() bool {
		subs, err := side.numSub(ctx, channel, rollCall)
		return err == nil && subs[channel]-subs[rollCall] == int64(m)
	})
	since := time.Now() // T

	// A hold observed: its Lock call's start, its return, its hand-off count.
	type seen struct {
		start, end time.Time
		handoffs   int64
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
				k, err := rdbs[i].HGet(ctx, name, "rlock:handoffs").Int64()
				if errors.Is(err, redis.Nil) {
					k, err = 0, nil
				}
				assert.NoError(t, err)
				mu.Lock()
				holds = append(holds, seen{start, end, k})
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
	var observed, handedOver int
	for _, s := range holds {
		if s.start.Before(since) || !s.end.Before(lastRedisson) {
			continue // not wholly while a Redisson waiter waited
		}
		observed++
		if s.handoffs > 0 {
			handedOver++
		}
		assert.LessOrEqual(t, s.handoffs, int64(fairTurns), "hand-offs in a row while a Redisson waiter waits")
	}
	t.Logf("%d rlock holds while Redisson waited, %d of them handed over", observed, handedOver)
}

// TestOpenRelease checks the rule of one release: a hold reached by
// fairTurns hand-offs in a row is handed over again only when no Redisson
// waiter is subscribed; with one, the release frees the lock, publishes "0"
// and keeps the queue, and the rlock waiter takes the lock after the window.
func TestOpenRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		redisson  bool
		wantCount string // the waiter's hold's rlock:handoffs
	}{
		{"without a Redisson subscriber the lock is handed over", false, "4"},
		{"with a Redisson subscriber the release is open", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			name := "open"
			a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
			ha := locktest.MustLock(t, a.Mutex(name), ctx)
			// As if ha had been handed over fairTurns times in a row.
			require.NoError(t, srv.Client().HSet(ctx, name, "rlock:handoffs", fairTurns).Err())

			got := make(chan context.Context, 1)
			go func() {
				h, err := b.Mutex(name).Lock(ctx)
				assert.NoError(t, err)
				got <- h
			}()
			channel, rollCall := redisson.Channel(name), "rlock_handoff:{"+name+"}"
			want := int64(0)
			var sub *redis.PubSub
			if tc.redisson {
				sub = srv.NewClient().Subscribe(ctx, channel) // a Redisson process's waiter
				defer sub.Close()
				_, err := sub.Receive(ctx)
				require.NoError(t, err)
				want = 1
			}
			testsupport.Eventually(t, 5*time.Second, "b queued and subscribed", func() bool {
				q, _ := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
				subs, _ := srv.Client().PubSubNumSub(ctx, channel, rollCall).Result()
				return q == 1 && subs[rollCall] == 1 && subs[channel]-subs[rollCall] == want
			})
			require.NoError(t, a.Mutex(name).Unlock(ha))
			if tc.redisson {
				msg, err := sub.ReceiveMessage(ctx)
				require.NoError(t, err)
				assert.Equal(t, "0", msg.Payload, "an open release publishes Redisson's unlock message")
			}
			var hb context.Context
			select {
			case hb = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the rlock waiter did not get the lock")
			}
			count, err := srv.Client().HGet(ctx, name, "rlock:handoffs").Result()
			if errors.Is(err, redis.Nil) {
				err = nil
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantCount, count, "hand-offs in a row that led to b's hold")
			require.NoError(t, b.Mutex(name).Unlock(hb))
		})
	}
}
