package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
)

// locks runs lockmw's kinds on the back-end: two Clients (two owners) on
// it, a mutex a waiter is handed, a semaphore's permits, a read-write lock's
// readers beside each other and its writer after them.
func (s *suite) locks(t *testing.T) {
	ctx := ctxOf(t)
	c1 := lockmw.NewFromBackend(s.b, lockmw.WithWatchdogTimeout(5*time.Second))
	c2 := lockmw.NewFromBackend(s.b, lockmw.WithWatchdogTimeout(5*time.Second))
	defer func() { _ = c1.Close() }()
	defer func() { _ = c2.Close() }()
	name := s.prefix + "mutex"

	t.Run("Mutex", func(t *testing.T) {
		m1, m2 := c1.Mutex(name), c2.Mutex(name)
		h1, err := m1.Lock(ctx)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if _, err := m2.TryLock(ctx, 0, 0); !errors.Is(err, lockmw.ErrNotAcquired) {
			t.Fatalf("TryLock of a held mutex: %v, want ErrNotAcquired", err)
		}
		got := make(chan error, 1)
		go func() {
			h2, err := m2.Lock(ctx)
			if err == nil {
				err = m2.Unlock(h2)
			}
			got <- err
		}()
		s.waitSubscribed(t, ctx, layout.Mutex(name).Channel)
		if err := m1.Unlock(h1); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("the waiter's Lock and Unlock: %v", err)
		}
	})

	t.Run("Semaphore", func(t *testing.T) {
		sem1, sem2 := c1.Semaphore(s.prefix+"sem", 2), c2.Semaphore(s.prefix+"sem", 2)
		a, err := sem1.Lock(ctx)
		if err != nil {
			t.Fatalf("first permit: %v", err)
		}
		b, err := sem2.Lock(ctx)
		if err != nil {
			t.Fatalf("second permit: %v", err)
		}
		if _, err := sem2.TryLock(ctx, 0, 0); !errors.Is(err, lockmw.ErrNotAcquired) {
			t.Fatalf("a third permit of 2: %v, want ErrNotAcquired", err)
		}
		if err := sem1.Unlock(a); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		third, err := sem2.TryLock(ctx, 10*time.Second, 0)
		if err != nil {
			t.Fatalf("a permit given back is taken again: %v", err)
		}
		for _, h := range []context.Context{b, third} {
			if err := sem2.Unlock(h); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
		}
	})

	t.Run("RWMutex", func(t *testing.T) {
		rw1, rw2 := c1.RWMutex(s.prefix+"rw"), c2.RWMutex(s.prefix+"rw")
		r1, err := rw1.RLock(ctx)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		r2, err := rw2.TryRLock(ctx, 0, 0)
		if err != nil {
			t.Fatalf("a second reader beside the first: %v", err)
		}
		if _, err := rw2.TryLock(ctx, 0, 0); !errors.Is(err, lockmw.ErrNotAcquired) {
			t.Fatalf("a writer beside readers: %v, want ErrNotAcquired", err)
		}
		if err := rw1.RUnlock(r1); err != nil {
			t.Fatalf("RUnlock: %v", err)
		}
		if err := rw2.RUnlock(r2); err != nil {
			t.Fatalf("RUnlock: %v", err)
		}
		w, err := rw2.TryLock(ctx, 10*time.Second, 0)
		if err != nil {
			t.Fatalf("the writer once the readers left: %v", err)
		}
		if err := rw2.Unlock(w); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})
}

// waitSubscribed polls until the server has a subscriber on channel (the
// waiter subscribed: its wake-up then goes through the back-end's
// subscription), when the back-end offers Subscribe.
func (s *suite) waitSubscribed(t *testing.T, ctx context.Context, channel string) {
	t.Helper()
	probe, err := s.b.Subscribe(ctx, false, s.prefix+"probe")
	if errors.Is(err, errors.ErrUnsupported) {
		return // the waiter polls
	}
	if err == nil {
		_ = probe.Close()
	}
	numsub := "numsub"
	if s.b.Info().Cluster && s.serverAtLeast(t, 7) {
		numsub = "shardnumsub"
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cmd := backend.NewCmd("pubsub", numsub, channel)
		// On a cluster the channel's own master counts its subscribers.
		if err := s.b.PipelineOn(ctx, channel, []*backend.Cmd{cmd}); errors.Is(err, errors.ErrUnsupported) {
			_ = s.b.Process(ctx, cmd)
		}
		v, err := cmd.Slice()
		if err == nil && len(v) == 2 && v[1] != int64(0) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no subscriber on %q: the waiter never subscribed", channel)
}
