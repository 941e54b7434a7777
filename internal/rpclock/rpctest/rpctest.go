// Package rpctest holds what the tests of grpcmw and connectmw share: the
// work their test handlers do (counted, blocking, losing its lock), and a
// look at a lock's queue and holders in Redis.
package rpctest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

// Patience bounds every wait for something that should happen soon.
const Patience = 5 * time.Second

// Queued is the number of waiters in the queue of the lock name (of a
// Client without a namespace), the sorted set internal/layout names.
func Queued(t testing.TB, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), layout.Mutex(name).Queue).Result()
	require.NoError(t, err)
	return n
}

// Holders is how many fields the lock hash at name has (one per owner).
func Holders(t testing.TB, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Client().HLen(context.Background(), name).Result()
	require.NoError(t, err)
	return n
}

// HoldLock takes name on a Client of its own, as another server would,
// with lease (0: the watchdog), until release (or the test's end).
func HoldLock(t testing.TB, srv *redistest.Server, name string, lease time.Duration) (release func()) {
	t.Helper()
	mu := locktest.NewOn(t, srv).Mutex(name)
	hctx, err := mu.TryLock(context.Background(), 0, lease)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = mu.Unlock(hctx) }) }
	t.Cleanup(release)
	return release
}

// Gauge is work that records how many handlers run it at once.
type Gauge struct {
	mu           sync.Mutex
	in, max, all int
}

// Work is the handlers' work: long enough for overlaps to show.
func (g *Gauge) Work(ctx context.Context, _ string) error {
	g.mu.Lock()
	g.in++
	g.all++
	g.max = max(g.max, g.in)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.in--
		g.mu.Unlock()
	}()
	time.Sleep(2 * time.Millisecond)
	return ctx.Err()
}

// Counts are how many ran it in all, and at most at once.
func (g *Gauge) Counts() (all, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.all, g.max
}

// Barrier returns work that succeeds only when parties calls are inside it
// at once, and fails when they are not within Patience.
func Barrier(parties int) func(context.Context, string) error {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return func(ctx context.Context, _ string) error {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(Patience):
			return errors.New("alone: no overlap")
		}
	}
}

// Blocker is work that sends its value on Entered and blocks until Release
// is closed or its context ends.
type Blocker struct {
	Entered chan string
	Release chan struct{}
}

// NewBlocker returns a Blocker for up to 16 calls.
func NewBlocker() *Blocker {
	return &Blocker{Entered: make(chan string, 16), Release: make(chan struct{})}
}

// Work blocks.
func (b *Blocker) Work(ctx context.Context, v string) error {
	b.Entered <- v
	select {
	case <-b.Release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Loser is work that signals Entered, waits for its context to end (the
// test makes it lose its lock), sends the cause on Causes and returns nil.
type Loser struct {
	Entered chan struct{}
	Causes  chan error
}

// NewLoser returns a Loser for one call.
func NewLoser() *Loser {
	return &Loser{Entered: make(chan struct{}, 1), Causes: make(chan error, 1)}
}

// Work waits for the loss.
func (l *Loser) Work(ctx context.Context, _ string) error {
	l.Entered <- struct{}{}
	select {
	case <-ctx.Done():
		l.Causes <- context.Cause(ctx)
	case <-time.After(Patience):
		l.Causes <- errors.New("the hold context did not end")
	}
	return nil
}
