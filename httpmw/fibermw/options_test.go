package fibermw_test

import (
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/httpmw/fibermw"
	"github.com/go-rlock/rlock/lockmw"
)

// neverDialled is a lockmw.Client on an address nothing listens on, for
// tests that take no lock; both are closed at the end of the test.
func neverDialled(t *testing.T) *lockmw.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	locks := lockmw.New(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	return locks
}

// The options convention: option constructors never panic; New applies the
// options, then panics on a nil Option or an invalid value with one line
// naming the option and the value. httpmw's checks are re-worded as
// fibermw's.
func TestConfigurationPanics(t *testing.T) {
	locks := neverDialled(t)
	assert.PanicsWithValue(t, "fibermw: New(nil): a lockmw.Client is required", func() { fibermw.New(nil) })
	assert.PanicsWithValue(t, "fibermw: New: nil Option", func() { fibermw.New(locks, fibermw.WithWait(0), nil) })
	for _, tc := range []struct {
		want string
		opt  fibermw.Option
	}{
		{"fibermw: WithKey(nil): a key function is required", fibermw.WithKey(nil)},
		{"fibermw: WithLogger(nil): a logger is required", fibermw.WithLogger(nil)},
		{"fibermw: WithParams(): at least one wildcard name is required", fibermw.WithParams()},
		{`fibermw: WithParams("1d"): not a wildcard name`, fibermw.WithParams("id", "1d")},
		{`fibermw: WithParams("*"): not a wildcard name`, fibermw.WithParams("*")},
		{"fibermw: WithWait(-1ns): must not be negative", fibermw.WithWait(-1)},
		{"fibermw: WithLease(-1s): must not be negative", fibermw.WithLease(-time.Second)},
		{"fibermw: WithRetryAfter(-1ms): must not be negative", fibermw.WithRetryAfter(-time.Millisecond)},
		{"fibermw: WithBusyStatus(399): must be a 4xx or 5xx status", fibermw.WithBusyStatus(399)},
		{"fibermw: WithBusyStatus(600): must be a 4xx or 5xx status", fibermw.WithBusyStatus(600)},
		{"fibermw: WithPermits(0): must be at least 1", fibermw.WithPermits(0)},
	} {
		assert.PanicsWithValue(t, tc.want, func() { fibermw.New(locks, tc.opt) }, "in New, not when the option is made")
	}
	assert.NotPanics(t, func() { fibermw.New(locks, fibermw.WithParams("_x", "é2")) })
	assert.NotPanics(t, func() { fibermw.New(locks, fibermw.WithWait(-1), fibermw.WithWait(0)) }, "the result is checked, not each option")
	assert.NotPanics(t, func() { fibermw.New(locks, fibermw.WithKey(nil), fibermw.WithKey(fiberKey)) }, "the result is checked, not each option")
}

func fiberKey(fiber.Ctx) string { return "k" }
