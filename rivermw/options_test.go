package rivermw_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/rivermw"
)

func TestNewPanicsOnBadConfiguration(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	c := lockmw.New(rdb)
	defer c.Close()
	for _, tc := range []struct {
		name string
		new  func()
		msg  string
	}{
		{"a nil client", func() { rivermw.New(nil) }, "rivermw: New(nil): a lockmw.Client is required"},
		{"a nil Option", func() { rivermw.New(c, nil) }, "rivermw: New: nil Option"},
		{"a nil key function", func() { rivermw.New(c, rivermw.WithKey(nil)) }, "rivermw: WithKey(nil): a key function is required"},
		{"a limit of 0", func() { rivermw.New(c, rivermw.WithPermits(0)) }, "rivermw: WithPermits(0): must be at least 1"},
		{"a zero snooze", func() { rivermw.New(c, rivermw.WithSnooze(0)) }, "rivermw: WithSnooze(0s): must be positive"},
		{"a negative snooze", func() { rivermw.New(c, rivermw.WithSnooze(-time.Second)) }, "rivermw: WithSnooze(-1s): must be positive"},
		{"a negative wait", func() { rivermw.New(c, rivermw.WithWait(-time.Second)) }, "rivermw: WithWait(-1s): must not be negative"},
		{"a wait without end", func() { rivermw.New(c, rivermw.WithWait(lockmw.Forever)) },
			"rivermw: WithWait(lockmw.Forever): River's job timeout does not bound the middleware's wait; give a finite wait"},
		{"a negative snooze cap", func() { rivermw.New(c, rivermw.WithMaxSnoozes(-2)) }, "rivermw: WithMaxSnoozes(-2): must not be negative (or Unlimited)"},
	} {
		t.Run(tc.name+" panics with one line", func(t *testing.T) {
			require.PanicsWithValue(t, tc.msg, tc.new)
			require.False(t, strings.Contains(tc.msg, "\n"))
		})
	}
}

// Option constructors never panic: New checks the result of all options.
func TestOptionsPanicInNewOnly(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	c := lockmw.New(rdb)
	defer c.Close()
	require.NotPanics(t, func() {
		_ = rivermw.WithKey(nil)
		_ = rivermw.WithPermits(0)
		_ = rivermw.WithSnooze(0)
		_ = rivermw.WithWait(-time.Second)
		_ = rivermw.WithMaxSnoozes(-5)
		_ = rivermw.WithLogger(nil)
	})
	require.NotPanics(t, func() { rivermw.New(c, rivermw.WithWait(-1), rivermw.WithWait(0)) }, "a later option overrides")
	require.NotPanics(t, func() { rivermw.New(c, rivermw.WithMaxSnoozes(rivermw.Unlimited), rivermw.WithMaxSnoozes(0)) })
	require.NotPanics(t, func() { rivermw.New(c, rivermw.WithLogger(nil)) }, "nil is slog.Default()")
	quorum := lockmw.NewQuorum([]redis.UniversalClient{rdb})
	defer quorum.Close()
	require.NotPanics(t, func() { rivermw.New(quorum, rivermw.WithPermits(1)) }, "a limit of 1 on a quorum client")
	require.NotPanics(t, func() { rivermw.New(quorum, rivermw.WithPermits(3)) }, "a limit above 1 on a quorum client: its permits are quorum mutexes")
}
