package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// The many-held scenario's targets.
const (
	locksPerScript  = 100    // renewal scripts per interval ≤ ⌈held/100⌉
	heapPerLockMax  = 2048.0 // bytes
	acquireParallel = 16     // goroutines taking and releasing the locks
)

// renewalLog records the watchdog's renewal scripts (one RenewalEvent per
// script), grouped into rounds: a script more than half an interval after a
// round's first one starts a new round. Only rounds that begin after
// counting is switched on are kept.
type renewalLog struct {
	interval time.Duration
	counting atomic.Bool

	mu         sync.Mutex
	roundStart time.Time
	rounds     []renewalRound
	notify     chan struct{}
}

type renewalRound struct {
	scripts, locks, renewed, lost, failed int
	slowest                               time.Duration
}

func (l *renewalLog) hook(e lockmw.RenewalEvent) {
	if !l.counting.Load() {
		return
	}
	now := time.Now()
	l.mu.Lock()
	if len(l.rounds) == 0 || now.Sub(l.roundStart) > l.interval/2 {
		l.rounds = append(l.rounds, renewalRound{})
		l.roundStart = now
	}
	r := &l.rounds[len(l.rounds)-1]
	r.scripts++
	r.locks += len(e.Locks)
	r.slowest = max(r.slowest, e.Duration)
	for _, lk := range e.Locks {
		switch lk.Outcome {
		case lockmw.RenewalOK:
			r.renewed++
		case lockmw.RenewalLost:
			r.lost++
		default:
			r.failed++
		}
	}
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// completeRounds returns the rounds that are over: all but the last, which
// may still be receiving scripts.
func (l *renewalLog) completeRounds() []renewalRound {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rounds) == 0 {
		return nil
	}
	return append([]renewalRound(nil), l.rounds[:len(l.rounds)-1]...)
}

// runManyHeld holds cfg.held locks under the watchdog for cfg.rounds
// renewal intervals, counting renewal scripts, goroutines and heap.
func runManyHeld(ctx context.Context, e *env, cfg config) (*result, error) {
	interval := cfg.watchdog / 3
	rl := &renewalLog{interval: interval, notify: make(chan struct{}, 1)}
	rdb := e.newRedis("rlock-bench-many-held")
	defer rdb.Close()
	c := lockmw.New(rdb, lockmw.WithWatchdogTimeout(cfg.watchdog), lockmw.WithHooks(lockmw.Hooks{Renewal: rl.hook}))
	defer c.Close()

	n := cfg.held
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("rlock-bench:held:%d", i)
	}
	mutexes := make([]*lockmw.Mutex, n)
	holds := make([]context.Context, n)
	// Warm up the connection pool and the scripts with as many goroutines
	// as will take the locks, so pool growth is not counted as lock cost.
	if err := parallel(acquireParallel, acquireParallel, func(i int) error {
		m := c.Mutex(fmt.Sprintf("rlock-bench:held-warm:%d", i))
		h, err := m.Lock(ctx)
		if err != nil {
			return err
		}
		return m.Unlock(h)
	}); err != nil {
		return nil, err
	}

	heap0, g0 := heapAndGoroutines()
	tenth := max(n/10, 1)
	take := func(from, to int) error {
		return parallel(to-from, acquireParallel, func(i int) error {
			m := c.Mutex(names[from+i])
			h, err := m.Lock(ctx)
			if err != nil {
				return err
			}
			mutexes[from+i], holds[from+i] = m, h
			return nil
		})
	}
	started := time.Now()
	if err := take(0, tenth); err != nil {
		return nil, err
	}
	acquireTime := time.Since(started)
	_, gTenth := heapAndGoroutines()
	started = time.Now()
	if err := take(tenth, n); err != nil {
		return nil, err
	}
	acquireTime += time.Since(started)
	heapN, gN := heapAndGoroutines()

	// Count the renewal rounds that begin from now on, and wait for
	// cfg.rounds complete ones (a round is complete when the next begins).
	rl.counting.Store(true)
	deadline := time.NewTimer(time.Duration(cfg.rounds+2)*interval + 10*time.Second)
	defer deadline.Stop()
	for len(rl.completeRounds()) < cfg.rounds {
		select {
		case <-rl.notify:
		case <-deadline.C:
			return nil, fmt.Errorf("saw %d complete renewal rounds of %d in time", len(rl.completeRounds()), cfg.rounds)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rounds := rl.completeRounds()[:cfg.rounds]
	_, gHeld := heapAndGoroutines()

	var lost []error
	for _, h := range holds {
		if err := context.Cause(h); err != nil {
			lost = append(lost, err)
			break
		}
	}
	if err := parallel(n, acquireParallel, func(i int) error {
		return mutexes[i].Unlock(holds[i])
	}); err != nil {
		return nil, errors.Join(append(lost, err)...)
	}
	if len(lost) > 0 {
		return nil, fmt.Errorf("a hold ended while held: %w", lost[0])
	}

	maxScripts, totalLocks, renewFailed := 0, 0, 0
	var slowest time.Duration
	for _, r := range rounds {
		maxScripts = max(maxScripts, r.scripts)
		totalLocks += r.renewed
		renewFailed += r.lost + r.failed
		slowest = max(slowest, r.slowest)
	}
	perLock := float64(heapN-heap0) / float64(n)
	scriptLimit := math.Ceil(float64(n) / locksPerScript)

	r := newResult("many-held", "rlock")
	r.param("held", n)
	r.param("watchdog", cfg.watchdog)
	r.param("rounds", cfg.rounds)
	r.num("acquire_per_sec", "took %.0f locks/s;", float64(n)/acquireTime.Seconds())
	r.num("renewal_scripts_per_interval", "renewal scripts/interval=%.0f", float64(maxScripts))
	r.num("locks_renewed_per_interval", "(locks renewed/interval %.0f,", float64(totalLocks)/float64(len(rounds)))
	r.num("renewal_failures", "not renewed %.0f,", float64(renewFailed))
	r.dur("renewal_slowest", "slowest pipeline", slowest)
	r.parts[len(r.parts)-1] += ")"
	r.note("goroutines at 0/%d/%d held=%d/%d/%d (after %d intervals %d)", tenth, n, g0, gTenth, gN, cfg.rounds, gHeld)
	r.Metrics["goroutines_0"] = float64(g0)
	r.Metrics["goroutines_tenth"] = float64(gTenth)
	r.Metrics["goroutines_n"] = float64(gN)
	r.Metrics["goroutines_after_rounds"] = float64(gHeld)
	r.num("heap_per_lock_bytes", "heap/lock=%.0f B", perLock)
	r.atMost(fmt.Sprintf("scripts/interval<=%.0f", scriptLimit), float64(maxScripts), scriptLimit)
	r.atMost("goroutines independent of held", float64(max(gN, gHeld)-gTenth), 0)
	r.atMost(fmt.Sprintf("heap/lock<=%.0f B", heapPerLockMax), perLock, heapPerLockMax)
	if renewFailed > 0 {
		r.atMost("every lock renewed", float64(renewFailed), 0)
	}
	return r, nil
}

// heapAndGoroutines returns HeapAlloc after two GCs, and NumGoroutine.
//
// The count is the fewest goroutines seen in 20 readings 5ms apart: a
// goroutine of parallel's that has called Done but not returned yet, or a
// renewal round's that is running, is there at one reading and gone at the
// next (one such made a run at a load of 13 count 5 goroutines at 250 held
// and 4 at a tenth), while a goroutine per lock would stay in every one.
func heapAndGoroutines() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g := runtime.NumGoroutine()
	for range 19 {
		time.Sleep(5 * time.Millisecond)
		g = min(g, runtime.NumGoroutine())
	}
	return ms.HeapAlloc, g
}

// parallel runs f(0..n-1) on k goroutines and returns the first error; the
// remaining calls are skipped after one fails.
func parallel(n, k int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, k)
	var wg sync.WaitGroup
	for g := range k {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs[g] = err
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
