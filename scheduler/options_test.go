package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/scheduler"
	"github.com/stretchr/testify/assert"
)

func TestDefaults(t *testing.T) {
	// Checked here as values; the behaviour behind each is checked in the
	// Locker tests (key names, minimum hold, timeout message).
	assert.Equal(t, "gocron:", scheduler.DefaultKeyPrefix)
	assert.Equal(t, 500*time.Millisecond, scheduler.DefaultMinHold)
	assert.Equal(t, 500*time.Millisecond, scheduler.DefaultLockTimeout)
}

func TestConstructorsPanicOnConfigurationThatCanNeverBeRight(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"NewLocker without a client", "scheduler: NewLocker(nil): a lockmw.Client is required", func() { scheduler.NewLocker(nil) }},
		{"NewElector without a client", `scheduler: NewElector(nil, "x"): a lockmw.Client is required`, func() { scheduler.NewElector(nil, "x") }},
		{"NewElector without a name", `scheduler: NewElector(c, ""): the elector name must not be empty`, func() { scheduler.NewElector(c, "") }},
		{"NewElector with an invalid name", `scheduler: NewElector(c, "a\x00b"): lockmw: invalid lock name`, func() { scheduler.NewElector(c, "a\x00b") }},
		{"a negative minimum hold", "scheduler: WithMinHold(-1s): must not be negative", func() { scheduler.NewLocker(c, scheduler.WithMinHold(-time.Second)) }},
		{"a zero lock timeout", "scheduler: WithLockTimeout(0s): must be positive", func() { scheduler.NewLocker(c, scheduler.WithLockTimeout(0)) }},
		{"a negative lock timeout", "scheduler: WithLockTimeout(-1ms): must be positive", func() { scheduler.NewElector(c, "x", scheduler.WithLockTimeout(-time.Millisecond)) }},
		{"a nil logger", "scheduler: WithLogger(nil)", func() { scheduler.NewLocker(c, scheduler.WithLogger(nil)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, ok := r.(string)
				if !assert.True(t, ok, "panics with a string, got %#v", r) {
					return
				}
				assert.True(t, strings.HasPrefix(msg, tc.want), "panic %q, want prefix %q", msg, tc.want)
				assert.NotContains(t, msg, "\n", "one line")
			}()
			tc.f()
		})
	}
}

// The options convention: option constructors never panic; NewLocker and
// NewElector apply the options, then panic on a nil Option or an invalid
// value with one line naming the option and the value.
func TestInvalidOptionsPanicInTheConstructorWithOneLine(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	for _, tc := range []struct {
		name, want string
		opt        scheduler.Option
	}{
		{"a nil Option", "scheduler: %s: nil Option", nil},
		{"a negative minimum hold", "scheduler: WithMinHold(-1s): must not be negative", scheduler.WithMinHold(-time.Second)},
		{"a zero lock timeout", "scheduler: WithLockTimeout(0s): must be positive", scheduler.WithLockTimeout(0)},
		{"a negative lock timeout", "scheduler: WithLockTimeout(-1ms): must be positive", scheduler.WithLockTimeout(-time.Millisecond)},
		{"a nil logger", "scheduler: WithLogger(nil): a logger is required", scheduler.WithLogger(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := func(constructor string) string {
				if strings.Contains(tc.want, "%s") {
					return fmt.Sprintf(tc.want, constructor)
				}
				return tc.want
			}
			assert.PanicsWithValue(t, want("NewLocker"), func() { scheduler.NewLocker(c, tc.opt) })
			assert.PanicsWithValue(t, want("NewElector"), func() { scheduler.NewElector(c, "x", tc.opt) })
		})
	}
	assert.NotPanics(t, func() { scheduler.NewLocker(c, scheduler.WithLockTimeout(0), scheduler.WithLockTimeout(time.Second)) },
		"the result is checked, not each option")
}

func TestConstructorsAcceptValidConfiguration(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	assert.NotPanics(t, func() {
		scheduler.NewLocker(c, scheduler.WithMinHold(0), scheduler.WithKeyPrefix(""), scheduler.WithLockTimeout(time.Nanosecond))
		e := scheduler.NewElector(c, "x", scheduler.WithKeyPrefix(""))
		_ = e.Close()
	})
}
