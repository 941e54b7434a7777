package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// semaphoreName is the one semaphore the semaphore scenario's workers take
// permits of; semaphoreKeys are its keys (lockmw's layout: the count and the
// permits taken), deleted before a run so that -permits applies on a
// server (-addr) where an earlier run set another number.
const semaphoreName = "rlock-bench:semaphore"

var semaphoreKeys = []string{semaphoreName, "{" + semaphoreName + "}:timeout"}

// semLocker is one worker's handle on the semaphore: a lockmw.Semaphore of
// a Client of its own. It counts the tool's own view of the holders: holders
// goes up after Lock returns and down before Unlock is called, so it can
// only overstate the permits out, and most is the highest it reached.
type semLocker struct {
	c       *lockmw.Client
	s       *lockmw.Semaphore
	holders *holderCount
}

// holderCount is the holders of the semaphore as the workers see them.
type holderCount struct {
	now, most atomic.Int64
}

func (h *holderCount) inc() {
	n := h.now.Add(1)
	for {
		m := h.most.Load()
		if n <= m || h.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (h *holderCount) dec() { h.now.Add(-1) }

func newSemLocker(rdb *redis.Client, permits int, holders *holderCount) *semLocker {
	c := lockmw.New(rdb)
	return &semLocker{c: c, s: c.Semaphore(semaphoreName, permits), holders: holders}
}

func (l *semLocker) lock(ctx context.Context) (context.Context, error) {
	p, err := l.s.Lock(ctx)
	if err == nil {
		l.holders.inc()
	}
	return p, err
}

func (l *semLocker) unlock(p context.Context) error {
	l.holders.dec()
	return l.s.Unlock(p)
}

func (l *semLocker) close() error { return l.c.Close() }

// runSemaphore has cfg.workers workers, each with its own go-redis client
// and lockmw.Client, take permits of one semaphore of cfg.permits for
// cfg.duration, holding one -hold and pausing -think between turns: the
// contended scenario's run (measureContended), on a semaphore.
func runSemaphore(ctx context.Context, e *env, cfg config) (*result, error) {
	if err := e.admin.Del(ctx, semaphoreKeys...).Err(); err != nil {
		return nil, err
	}
	counter := newCmdCounter()
	holders := &holderCount{}
	lockers := make([]locker, cfg.workers)
	for i := range lockers {
		rdb := e.newRedis(fmt.Sprintf("rlock-bench-semaphore-%d", i), counter)
		defer rdb.Close()
		l := newSemLocker(rdb, cfg.permits, holders)
		defer l.close()
		lockers[i] = l
	}
	// Warm up: connections and scripts, one worker at a time.
	for _, l := range lockers {
		p, err := l.lock(ctx)
		if err != nil {
			return nil, fmt.Errorf("warm-up lock: %w", err)
		}
		if err := l.unlock(p); err != nil {
			return nil, fmt.Errorf("warm-up unlock: %w", err)
		}
	}
	m, err := measureContended(ctx, e, cfg, lockers, counter)
	if err != nil {
		return nil, err
	}
	free, err := permitsBack(ctx, lockers[0].(*semLocker).s, cfg.permits)
	if err != nil {
		return nil, err
	}
	return semaphoreResult(cfg, m, holders.most.Load(), free), nil
}

// permitsBack polls the free permits until every one is back or a few
// seconds pass, and returns the last count: a Lock cancelled at the end of
// the run is undone on its Client's renewer, after Lock has returned.
func permitsBack(ctx context.Context, s *lockmw.Semaphore, permits int) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		free, err := s.Available(ctx)
		if err != nil || free >= permits || time.Now().After(deadline) {
			return free, err
		}
		time.Sleep(time.Millisecond)
	}
}
