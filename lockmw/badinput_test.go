package lockmw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	for _, name := range []string{"", strings.Repeat("x", lockmw.MaxNameLen+1), "bad\xffutf8", "new\nline", "nul\x00", "rlock_queue:{x}", "redisson_unlock_latch:{x}:1"} {
		m := c.Mutex(name) // never panics
		_, err := m.Lock(ctx)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName, "Lock(%q)", name)
		_, err = m.TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName)
		assert.ErrorIs(t, m.Unlock(ctx), lockmw.ErrInvalidName)
		assert.ErrorIs(t, m.UnlockAt(ctx, time.Now()), lockmw.ErrInvalidName)
		_, err = m.ForceUnlock(ctx)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName)
		_, err = m.IsLocked(ctx)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName)
		_, err = m.IsHeld(ctx)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName)
		_, err = m.TTL(ctx)
		assert.ErrorIs(t, err, lockmw.ErrInvalidName)
		_, ok := m.Token(ctx)
		assert.False(t, ok)
	}
	// Unicode, braces and long-but-allowed names are fine on a single node.
	for _, name := range []string{"注文:42", "{user}:7", "a{}b", "}{", strings.Repeat("y", lockmw.MaxNameLen)} {
		m := c.Mutex(name)
		h, err := m.TryLock(ctx, 0, 0)
		require.NoError(t, err, name)
		require.NoError(t, m.Unlock(h), name)
	}
}

func TestInvalidDurations(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	m := locktest.NewOn(t, srv).Mutex("durations")
	_, err := m.TryLock(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	_, err = m.TryLock(ctx, 0, -time.Second)
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

func TestConstructorPanics(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for name, f := range map[string]func(){
		"nil client":            func() { lockmw.New(nil) },
		"zero watchdog":         func() { lockmw.New(rdb, lockmw.WithWatchdogTimeout(0)) },
		"negative watchdog":     func() { lockmw.New(rdb, lockmw.WithWatchdogTimeout(-time.Second)) },
		"empty client ID":       func() { lockmw.New(rdb, lockmw.WithClientID("")) },
		"nil logger":            func() { lockmw.New(rdb, lockmw.WithLogger(nil)) },
		"zero release timeout":  func() { lockmw.New(rdb, lockmw.WithReleaseTimeout(0)) },
		"client ID with a pipe": func() { lockmw.New(rdb, lockmw.WithClientID("a|b")) },
	} {
		assert.Panics(t, f, name)
	}
	// The panic is one line that names the option.
	defer func() {
		msg, _ := recover().(string)
		assert.Contains(t, msg, "WithWatchdogTimeout")
		assert.NotContains(t, msg, "\n")
	}()
	lockmw.New(rdb, lockmw.WithWatchdogTimeout(0))
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, c.ID(), "a random UUID")
	assert.NotEqual(t, c.ID(), locktest.NewOn(t, srv).ID())
	assert.Equal(t, "fixed-id", locktest.NewOn(t, srv, lockmw.WithClientID("fixed-id")).ID())
	assert.Same(t, c.Redis(), c.Redis())
	m := c.Mutex("defaults")
	h := locktest.MustLock(t, m, ctx)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, float64(lockmw.DefaultWatchdogTimeout), float64(ttl), float64(time.Second), "the default watchdog timeout is 30s")
	assert.Equal(t, 30*time.Second, lockmw.DefaultWatchdogTimeout)
	assert.Equal(t, 10*time.Second, lockmw.DefaultReleaseTimeout)
	_, ok := m.Token(h)
	assert.False(t, ok, "no fencing by default")
	require.NoError(t, m.Unlock(h))
	_ = context.Background()
}

func TestExtremeDurations(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	m := a.Mutex("extreme")
	// A lease of Forever is a TTL of (practically) forever, not an overflow.
	h, err := m.TryLock(ctx, 0, lockmw.Forever)
	require.NoError(t, err)
	_, err = b.Mutex("extreme").TryLock(ctx, 50*time.Millisecond, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 99*365*24*time.Hour, "a lease of Forever is 100 years")
	require.NoError(t, m.Unlock(h))
	// UnlockAt a thousand years from now keeps it as long as rlock keeps anything.
	h = locktest.MustLock(t, m, ctx)
	require.NoError(t, m.UnlockAt(h, time.Now().AddDate(1000, 0, 0)))
	ttl, err = m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 99*365*24*time.Hour)
	_, err = m.ForceUnlock(ctx)
	require.NoError(t, err)
	// A lease under a millisecond rounds up to one.
	h, err = m.TryLock(ctx, 0, time.Microsecond)
	require.NoError(t, err)
	testsupport.Done(t, h, time.Second, "a tiny lease ends")
	// Nil options are ignored.
	assert.NotPanics(t, func() { a.Mutex("nil-option", nil) })
}

// "k" and "{k}" are two locks; they must not share a waiter queue.
func TestBracedAndPlainNamesDoNotAlias(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b, w := locktest.NewOn(t, srv), locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	hb := locktest.MustLock(t, a.Mutex("{k}"), ctx)
	hp := locktest.MustLock(t, b.Mutex("k"), ctx)
	got := make(chan error, 1)
	go func() {
		_, err := w.Mutex("{k}").TryLock(ctx, 500*time.Millisecond, 0)
		got <- err
	}()
	testsupport.Eventually(t, 5*time.Second, "the waiter for {k} is queued", func() bool {
		n, _ := srv.Client().ZCard(ctx, "rlock_queue:{k}~").Result()
		return n == 1
	})
	require.NoError(t, b.Mutex("k").Unlock(hp))
	assert.ErrorIs(t, <-got, lockmw.ErrNotAcquired, "unlocking k does not hand {k} to its waiter")
	held, err := a.Mutex("{k}").IsHeld(hb)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, a.Mutex("{k}").Unlock(hb))
}
