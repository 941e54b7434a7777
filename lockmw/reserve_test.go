package lockmw_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reserveWindowMin is reserve.go's reserveWindowMin: the shortest window of
// a reservation.
const reserveWindowMin = 20 * time.Millisecond

// reservePatience bounds a wait the reservation tests expect to end: far
// longer than any of them takes on a loaded machine.
const reservePatience = 30 * time.Second

// oneWay is the delay the proxy adds to each direction: a round trip above
// 1 ms, where a Redisson waiter needs a millisecond or more to land its
// acquire after the "0".
const oneWay = 500 * time.Microsecond

// TestReservedForRedissonWaiters checks the reservation at a round trip
// above 1 ms (every client, rlock's and Redisson's, through a proxy that
// delays each direction by 500µs), for Redisson 4.x's waiter, for a
// slower one that needs two round trips from the "0" to its acquire, and
// for node-redisson's (internal/redisson's WithNodeWake: it unsubscribes,
// and so leaves the subscriber count, before its acquire). Each
// round a controller holds the lock until m Redisson processes wait
// (subscribed), then n rlock workers, which never pause, and the Redisson
// waiters contend until each Redisson waiter had the lock once. While one
// waits:
//   - an rlock hold reached by fairTurns hand-offs in a row is followed by
//     a Redisson hold: its release reserved the lock, and the reservation
//     lasts until a Redisson thread used it;
//   - so the round's rlock holds are at most m × (fairTurns + 1).
//
// Both hold unless a reservation's window passed unused, which a loaded
// machine may cause: the hold after it then comes the shortest window or
// more after the release, and the name is quiet for a while (no
// reservation), which each rlock hold reads from the waiter table. Neither
// is checked then: not the hold after such a gap, nor the round's count. A
// hold that a starved machine lost before its Unlock (its claim window or
// TTL ran out) is left out. The test never judges a wall-clock share.
func TestReservedForRedissonWaiters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		n, m int
		opts []redisson.Option
	}{
		{"a Redisson 4.x waiter beside two rlock clients", 2, 1, nil},
		{"two Redisson 4.x waiters beside four rlock clients", 4, 2, nil},
		{"a slower waiter beside two rlock clients", 2, 1, []redisson.Option{redisson.WithSlowWake()}},
		{"two slower waiters beside four rlock clients", 4, 2, []redisson.Option{redisson.WithSlowWake()}},
		{"a node-redisson waiter beside two rlock clients", 2, 1, []redisson.Option{redisson.WithNodeWake()}},
		{"two node-redisson waiters beside four rlock clients", 4, 2, []redisson.Option{redisson.WithNodeWake()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newReserveRun(t, mutexReserveKind, tc.opts)
			r.check(r.run(tc.n, tc.m, 6), tc.m)
		})
	}
}

// TestSemaphoreReservedForRedissonWaiters is TestReservedForRedissonWaiters
// for a semaphore of one permit beside Redisson's RPermitExpirableSemaphore
// waiters: while one waits, an rlock hold reached by fairTurns hand-offs in
// a row gives its permit back reserved, and the next permit taken is a
// Redisson waiter's; a round's rlock holds are at most m × (fairTurns + 1).
// With the 1 ms window the semaphore had before, a Redisson waiter at this
// round trip (over 1 ms) could not land its acquire in time, and rlock
// waiters took the permit after it.
func TestSemaphoreReservedForRedissonWaiters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		n, m int
		opts []redisson.Option
	}{
		{"a Redisson 4.x waiter beside two rlock clients", 2, 1, nil},
		{"two Redisson 4.x waiters beside four rlock clients", 4, 2, nil},
		{"a slower waiter beside two rlock clients", 2, 1, []redisson.Option{redisson.WithSlowWake()}},
		{"two slower waiters beside four rlock clients", 4, 2, []redisson.Option{redisson.WithSlowWake()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newReserveRun(t, semaphoreReserveKind, tc.opts)
			r.check(r.run(tc.n, tc.m, 6), tc.m)
		})
	}
}

// reserveKind is what a reservation run needs of a lock kind: its name, the
// rlock handle, where an rlock hold's hand-off count lives, Redisson's
// channel and one Redisson hold.
type reserveKind struct {
	name     string
	rlock    func(c *lockmw.Client, name string) lockmw.Locker
	handoffs func(name string) (key, field string) // the count of hand-offs in a row of the hold being held
	channel  func(name string) string
	// redissonHold takes the lock once with c's Redisson handle, calls held
	// when it holds it, and releases it.
	redissonHold func(ctx context.Context, c *redisson.Client, name string, held func()) error
}

// mutexReserveKind is the mutex beside Redisson's RLock: the hand-off count
// is in the lock's hash.
var mutexReserveKind = reserveKind{
	name:     "reserved",
	rlock:    func(c *lockmw.Client, name string) lockmw.Locker { return c.Mutex(name) },
	handoffs: func(name string) (string, string) { return name, "rlock:handoffs" },
	channel:  redisson.Channel,
	redissonHold: func(ctx context.Context, c *redisson.Client, name string, held func()) error {
		l := c.GetLock(name)
		if err := l.Lock(ctx, 1, 0); err != nil {
			return err
		}
		held()
		return l.Unlock(context.WithoutCancel(ctx), 1)
	},
}

// semaphoreReserveKind is a semaphore of one permit beside Redisson's
// RPermitExpirableSemaphore: the hand-off count is in the waiter table
// (read while one holds the only permit, it is the one its release counts
// from).
var semaphoreReserveKind = reserveKind{
	name:     "sem-reserved",
	rlock:    func(c *lockmw.Client, name string) lockmw.Locker { return c.Semaphore(name, 1) },
	handoffs: func(name string) (string, string) { return "rlock_waiters:{" + name + "}", "rlock:handoffs" },
	channel:  redisson.SemaphoreChannel,
	redissonHold: func(ctx context.Context, c *redisson.Client, name string, held func()) error {
		s := c.GetPermitExpirableSemaphore(name)
		id, err := s.Acquire(ctx, -1)
		if err != nil {
			return err
		}
		held()
		return s.Release(context.WithoutCancel(ctx), id)
	},
}

// holdSeen is one hold a reservation run observed.
type holdSeen struct {
	redisson bool
	acquired time.Time // Lock returned
	unlock   time.Time // Unlock called
	handoffs int64     // an rlock hold's rlock:handoffs
	quiet    bool      // an rlock hold's name was quiet: its release would not reserve
	others   int64     // subscribers of Redisson's channel that are not rlock clients, just before Unlock (lib.lua's rlock_others_wait)
	lost     bool      // its Unlock found it lost: left out of the checks
}

// reserveRound is one round of a run: when every Redisson waiter of the
// round was subscribed, and when the last of them got the lock.
type reserveRound struct{ since, last time.Time }

// reserveRun is one case of TestReservedForRedissonWaiters: the server, the
// delaying proxy every client goes through, and the holds seen.
type reserveRun struct {
	t     *testing.T
	ctx   context.Context
	srv   *redistest.Server
	proxy *faultproxy.Proxy
	kind  reserveKind
	opts  []redisson.Option
	name  string

	mu    sync.Mutex
	holds []holdSeen
}

func newReserveRun(t *testing.T, kind reserveKind, opts []redisson.Option) *reserveRun {
	srv := redistest.Start(t)
	p, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	p.SetRequestLatency(oneWay)
	p.SetLatency(oneWay)
	return &reserveRun{t: t, ctx: testsupport.Ctx(t), srv: srv, proxy: p, kind: kind, opts: opts, name: kind.name}
}

// client is a go-redis client with default options through the proxy.
func (r *reserveRun) client() *redis.Client {
	return r.srv.NewClient(func(o *redis.Options) { o.Addr = r.proxy.Addr() })
}

func (r *reserveRun) add(h holdSeen) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds = append(r.holds, h)
}

func (r *reserveRun) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.holds)
}

// run has n rlock workers contend for rounds rounds of m Redisson waiters.
func (r *reserveRun) run(n, m, rounds int) []reserveRound {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		mx := r.kind.rlock(locktest.New(r.t, r.client()), r.name)
		wg.Go(func() { r.rlockWorker(mx, stop) })
	}
	defer wg.Wait()
	defer close(stop)
	testsupport.Eventually(r.t, reservePatience, "the rlock workers took turns", func() bool { return r.count() >= 2*n })
	ctrl := r.kind.rlock(locktest.New(r.t, r.client()), r.name)
	var out []reserveRound
	for range rounds {
		out = append(out, r.round(ctrl, m))
	}
	return out
}

// rlockWorker locks, reads its hold's hand-off count and unlocks, until
// stop is closed.
func (r *reserveRun) rlockWorker(mx lockmw.Locker, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		h, err := mx.Lock(r.ctx)
		if !assert.NoError(r.t, err) {
			return
		}
		r.unlockObserved(mx, h)
	}
}

// unlockObserved records the rlock hold h and releases it. While it is
// held, nothing changes the hand-off count nor starts a quiet time (only a
// reservation that passed unused does, and none is on while rlock holds
// the lock).
func (r *reserveRun) unlockObserved(mx lockmw.Locker, h context.Context) {
	hs := holdSeen{acquired: time.Now()}
	var err error
	key, field := r.kind.handoffs(r.name)
	hs.handoffs, hs.quiet, err = readHoldAt(r.ctx, r.srv.Client(), r.name, key, field)
	assert.NoError(r.t, err)
	hs.others, err = r.othersSubscribed()
	assert.NoError(r.t, err)
	hs.unlock = time.Now()
	err = mx.Unlock(h)
	if errors.Is(err, lockmw.ErrLockLost) {
		// Starved past its claim window or its TTL, the hold ended before
		// this reading: its times and count say nothing of the protocol.
		r.t.Logf("an rlock hold was lost before its Unlock, left out of the checks: %v", err)
		hs.lost = true
	} else {
		assert.NoError(r.t, err)
	}
	r.add(hs)
}

// othersSubscribed counts the subscribers of Redisson's channel that are not
// rlock clients: more than the roll-call channel has (lib.lua's
// rlock_others_wait).
func (r *reserveRun) othersSubscribed() (int64, error) {
	channel, rollCall := r.kind.channel(r.name), "rlock_handoff:{"+r.name+"}"
	subs, err := r.srv.Client().PubSubNumSub(r.ctx, channel, rollCall).Result()
	return subs[channel] - subs[rollCall], err
}

// readHold reads, while the caller holds the lock name, its hold's hand-off
// count and whether the name is quiet (lib.lua's rlock:quiet, in the
// server's ms: no release reserves the lock until then). Neither changes
// while an rlock caller that waited holds the lock.
func readHold(ctx context.Context, rdb redis.UniversalClient, name string) (handoffs int64, quiet bool, err error) {
	return readHoldAt(ctx, rdb, name, name, "rlock:handoffs")
}

// readHoldAt is readHold for a hand-off count kept in field of the hash key.
func readHoldAt(ctx context.Context, rdb redis.UniversalClient, name, key, field string) (handoffs int64, quiet bool, err error) {
	handoffs, err = rdb.HGet(ctx, key, field).Int64()
	if errors.Is(err, redis.Nil) {
		handoffs, err = 0, nil
	}
	if err != nil {
		return 0, false, err
	}
	q, err := rdb.HGet(ctx, "rlock_waiters:{"+name+"}", "rlock:quiet").Result()
	if errors.Is(err, redis.Nil) {
		return handoffs, false, nil
	}
	now, terr := rdb.Time(ctx).Result()
	if err = errors.Join(err, terr); err != nil {
		return 0, false, err
	}
	until, _, _ := strings.Cut(q, "|")
	ms, err := strconv.ParseInt(until, 10, 64)
	return handoffs, ms > now.UnixMilli(), err
}

// round holds the lock with ctrl until m Redisson processes wait for it,
// then lets it go and waits until each of them had it once.
func (r *reserveRun) round(ctrl lockmw.Locker, m int) reserveRound {
	h, err := ctrl.Lock(r.ctx)
	require.NoError(r.t, err)
	done := make(chan time.Time, m)
	for range m {
		c := redisson.NewClient(r.client(), r.opts...)
		r.t.Cleanup(func() { _ = c.Close() })
		go func() {
			var acquired time.Time
			err := r.kind.redissonHold(r.ctx, c, r.name, func() {
				acquired = time.Now()
				r.add(holdSeen{redisson: true, acquired: acquired, unlock: time.Now()})
			})
			assert.NoError(r.t, err)
			done <- acquired
		}()
	}
	testsupport.Eventually(r.t, reservePatience, "the Redisson waiters subscribed", func() bool {
		n, err := r.othersSubscribed()
		return err == nil && n == int64(m)
	})
	rd := reserveRound{since: time.Now()}
	r.unlockObserved(ctrl, h)
	for range m {
		at := testsupport.Recv(r.t, done, reservePatience, "a Redisson waiter got the lock")
		rd.last = maxTime(rd.last, at)
	}
	return rd
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// check applies the reservation's rules to each round's holds (see
// TestReservedForRedissonWaiters).
func (r *reserveRun) check(rounds []reserveRound, m int) {
	r.mu.Lock()
	holds := slices.DeleteFunc(slices.Clone(r.holds), func(h holdSeen) bool { return h.lost })
	r.mu.Unlock()
	slices.SortFunc(holds, func(a, b holdSeen) int { return a.acquired.Compare(b.acquired) })
	checked, excused := 0, 0
	for _, rd := range rounds {
		// quiet: a hold read the name quiet; gap: a hold was followed by
		// the shortest window or more, so a reservation may have passed
		// unused and the name been quiet for a while, which the holds'
		// readings, each at one instant, can miss.
		rlock, quiet, gap := 0, false, false
		for i := 0; i+1 < len(holds); i++ {
			h, next := holds[i], holds[i+1]
			if h.redisson || h.unlock.Before(rd.since) || !h.acquired.Before(rd.last) {
				continue // not an rlock hold released while one of the round's waiters waited
			}
			rlock++
			gapAfter := next.acquired.Sub(h.unlock) >= reserveWindowMin
			quiet, gap = quiet || h.quiet, gap || gapAfter
			switch {
			case h.handoffs < fairTurns:
			case h.quiet || gapAfter:
				excused++
			default:
				checked++
				assert.True(r.t, next.redisson, "the hold after %d hand-offs in a row (released %v after the round began, %d subscribers not rlock's just before) is a Redisson waiter's, %v after",
					h.handoffs, h.unlock.Sub(rd.since), h.others, next.acquired.Sub(h.unlock))
			}
		}
		if !quiet && !gap && !assert.LessOrEqual(r.t, rlock, m*(fairTurns+1), "rlock holds while the round's Redisson waiters waited") {
			for _, h := range holds {
				if !h.acquired.Before(rd.since.Add(-time.Second)) && !h.acquired.After(rd.last) {
					r.t.Logf("hold: redisson %v, acquired %s, unlock +%v, hand-offs %d, quiet %v, others %d", h.redisson,
						h.acquired.Format("15:04:05.000000"), h.unlock.Sub(h.acquired), h.handoffs, h.quiet, h.others)
				}
			}
		}
	}
	r.t.Logf("%d holds; of the holds released after %d hand-offs while a Redisson waiter waited, %d checked, %d quiet or followed by a gap", len(holds), fairTurns, checked, excused)
	if len(holds) == 0 {
		r.t.Error("no hold seen")
	}
}
