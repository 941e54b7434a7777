package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLostWhenRedisUnreachable(t *testing.T) {
	t.Parallel()
	for _, o := range goRedisOptionSets {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			const timeout = 1500 * time.Millisecond
			c := locktest.New(t, srv.NewClient(o.mod), lockmw.WithWatchdogTimeout(timeout))
			m := c.Mutex("paused")
			h := locktest.MustLock(t, m, context.Background())
			require.NoError(t, srv.Pause())
			paused := time.Now()
			defer func() { _ = srv.Resume() }()
			// The last renewal that succeeded was sent before the pause, so the key
			// could expire no later than paused + timeout: the hold must be gone by then.
			select {
			case <-h.Done():
			case <-time.After(2 * timeout):
				t.Fatal("hold context not cancelled while renewals failed")
			}
			lostAfter := time.Since(paused)
			assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
			// The loss timer is set to the last renewal's send time + timeout -
			// margin, which is before paused + timeout. Without it the hold would
			// be cancelled never (a paused server tells nothing); a loaded machine
			// may run the timer late, but not by a renewal interval.
			assert.LessOrEqual(t, lostAfter, timeout+timeout/3, "cancelled about when the key could have expired")
			require.NoError(t, srv.Resume())
			assert.ErrorIs(t, m.Unlock(h), lockmw.ErrLockLost, "nothing touched after a loss")
		})
	}
}

// Not parallel: it counts the process's goroutines.
func TestRenewalBatchesAndGoroutines(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	// A round's deadline is a third of the watchdog timeout (1 s here); a
	// round that misses it on a loaded machine counts no batch.
	const timeout = 3 * time.Second
	const n = 250
	var mu sync.Mutex
	var batches []int
	hooks := lockmw.Hooks{Renewal: func(e lockmw.RenewalEvent) {
		mu.Lock()
		defer mu.Unlock()
		if testsupport.IsTimeout(e.Err) {
			t.Logf("a renewal round missed its deadline (not counted): %v", e.Err)
			return
		}
		assert.NoError(t, e.Err)
		ok := 0
		for _, l := range e.Locks {
			if l.Outcome == lockmw.RenewalOK {
				ok++
			}
		}
		batches = append(batches, ok)
	}}
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(timeout), lockmw.WithHooks(hooks))
	// Warm up the client's goroutines.
	h0 := locktest.MustLock(t, c.Mutex("warm"), ctx)
	before := runtime.NumGoroutine()
	holds := make([]context.Context, n)
	for i := range holds {
		holds[i] = locktest.MustLock(t, c.Mutex(fmt.Sprintf("many-%d", i)), ctx)
	}
	assert.Less(t, runtime.NumGoroutine()-before, 10, "goroutines do not grow with the %d held locks", n)
	mu.Lock()
	batches = nil
	mu.Unlock()
	testsupport.Eventually(t, 20*time.Second, "two renewal rounds", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(batches) >= 6
	})
	mu.Lock()
	for _, b := range batches[:3] {
		assert.LessOrEqual(t, b, 100, "at most 100 locks a script")
	}
	mu.Unlock()
	for i, h := range holds {
		require.NoError(t, c.Mutex(fmt.Sprintf("many-%d", i)).Unlock(h))
	}
	require.NoError(t, c.Mutex("warm").Unlock(h0))
}

// A Renewal event says when its script was sent: after the hold began, and
// its Duration later the reply was in, before the hook ran, however late
// the hook runs (here a hook before it sleeps). A hold that a starved
// renewer let go before its first renewal (its loss timer ends it a
// watchdog timeout after the acquisition was sent) has no event: the test
// takes another, on a name of its own, and judges the first renewed.
func TestRenewalEventSent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	type seen struct {
		name       string
		sent, hook time.Time
		took       time.Duration
	}
	got := make(chan seen, 1)
	var hook time.Time
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(time.Second),
		lockmw.WithHooks(lockmw.Hooks{Renewal: func(lockmw.RenewalEvent) {
			hook = time.Now()
			time.Sleep(50 * time.Millisecond)
		}}),
		lockmw.WithHooks(lockmw.Hooks{Renewal: func(e lockmw.RenewalEvent) {
			select {
			case got <- seen{e.Locks[0].Name, e.Sent, hook, e.Duration}:
			default:
			}
		}}))
	ctx := testsupport.Ctx(t)
	name := func(try int) string { return fmt.Sprintf("renewal-sent-%d", try) }
	var locked time.Time
	s, m, h := locktest.FirstRenewal(t, ctx, got, func(try int) (lockmw.Locker, context.Context) {
		m := c.Mutex(name(try))
		locked = time.Now()
		return m, locktest.MustLock(t, m, ctx)
	}, func(try int, s seen) bool { return s.name == name(try) })
	if err := m.Unlock(h); !errors.Is(err, lockmw.ErrLockLost) { // a renewal may find it gone
		require.NoError(t, err)
	}
	assert.True(t, s.sent.After(locked), "sent after the hold began")
	assert.False(t, s.sent.Add(s.took).After(s.hook), "the reply was in before the hook ran")
}
