package rueidisrlock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Redisson's RLock (internal/redisson, its scripts and its pub/sub
// wake-up) and rlock on rueidis share names as rlock on go-redis does:
// under contention, on loopback and through a link of 500 µs each way,
// neither ever holds beside the other, and each side's waiters are woken
// by the other's release.
func TestRedissonInterplay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		latency time.Duration
	}{{"loopback", 0}, {"500us each way", 500 * time.Microsecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			srv := redistest.Start(t)
			addr := srv.Addr()
			if tc.latency > 0 {
				p, err := faultproxy.Start(addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close() })
				p.SetLatency(tc.latency)
				p.SetRequestLatency(tc.latency)
				addr = p.Addr()
			}
			// A short watchdog: a Redisson waiter that misses its wake-up
			// waits for the rlock hold's TTL (seen once in 20 rounds with
			// go-redis's back-end as with this one: issue 50's ground).
			rc := rueidisrlock.New(newClient(t, rueidis.ClientOption{InitAddress: []string{addr}}), lockmw.WithWatchdogTimeout(2*time.Second))
			t.Cleanup(func() { _ = rc.Close() })
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = rdb.Close() })
			rs := redisson.NewClient(rdb)
			t.Cleanup(func() { _ = rs.Close() })

			const name, rounds = "{interplay}:1", 20
			var overlaps atomic.Int32
			var rlockHolds, redissonHolds int
			held := make(chan struct{}, 1) // a token: whoever holds the name has it
			enter := func() {
				select {
				case held <- struct{}{}:
				default:
					overlaps.Add(1)
				}
			}
			leave := func() { <-held }
			done := make(chan error, 2)
			go func() { // rlock on rueidis
				m := rc.Mutex(name)
				for range rounds {
					h, err := m.Lock(ctx)
					if err != nil {
						done <- err
						return
					}
					enter()
					rlockHolds++
					time.Sleep(time.Millisecond)
					leave()
					if err := m.Unlock(h); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			go func() { // Redisson
				l := rs.GetLock(name)
				for range rounds {
					if err := l.Lock(ctx, 1, 0); err != nil {
						done <- err
						return
					}
					enter()
					redissonHolds++
					time.Sleep(time.Millisecond)
					leave()
					if err := l.Unlock(ctx, 1); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for range 2 {
				if err := <-done; err != nil {
					t.Fatalf("a side failed: %v", err)
				}
			}
			if n := overlaps.Load(); n != 0 {
				t.Fatalf("%d holds beside another", n)
			}
			if rlockHolds != rounds || redissonHolds != rounds {
				t.Fatalf("holds: rlock %d, Redisson %d, want %d each", rlockHolds, redissonHolds, rounds)
			}
		})
	}
}
