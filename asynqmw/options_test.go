package asynqmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/lockmw"
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
		{"a nil client", func() { asynqmw.New(nil) }, "asynqmw: New(nil): a lockmw.Client is required"},
		{"a nil Option", func() { asynqmw.New(c, nil) }, "asynqmw: New: nil Option"},
		{"a negative wait", func() { asynqmw.New(c, asynqmw.WithWait(-time.Second)) }, "asynqmw: WithWait(-1s): must not be negative"},
		{"a negative dedup window", func() { asynqmw.New(c, asynqmw.WithDedupWindow(-time.Second)) }, "asynqmw: WithDedupWindow(-1s): must not be negative"},
		{"a nil key function", func() { asynqmw.New(c, asynqmw.WithKey(nil)) }, "asynqmw: WithKey(nil): a key function is required"},
		{"an unknown busy policy", func() { asynqmw.New(c, asynqmw.WithOnBusy(7)) }, "asynqmw: WithOnBusy(BusyPolicy(7)): must be Retry or Skip"},
		{"a nil skip function", func() { asynqmw.New(c, asynqmw.WithOnSkip(nil)) }, "asynqmw: WithOnSkip(nil): a function is required"},
		{"a limit of 0", func() { asynqmw.New(c, asynqmw.WithPermits(0)) }, "asynqmw: WithPermits(0): must be at least 1"},
		{"a negative limit", func() { asynqmw.New(c, asynqmw.WithPermits(-2)) }, "asynqmw: WithPermits(-2): must be at least 1"},
		{"a dedup window with a limit above 1", func() { asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute), asynqmw.WithPermits(2)) },
			"asynqmw: WithDedupWindow(1m0s) with WithPermits(2): a duplicate could run beside the first, before its mark is written; use 1 permit"},
		{"a negative busy retry delay", func() { asynqmw.RetryDelay(-time.Second, nil) }, "asynqmw: RetryDelay(-1s, …): the busy delay must not be negative"},
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
		_ = asynqmw.WithWait(-time.Second)
		_ = asynqmw.WithDedupWindow(-time.Second)
		_ = asynqmw.WithKey(nil)
		_ = asynqmw.WithOnBusy(7)
		_ = asynqmw.WithPermits(0)
	})
	require.NotPanics(t, func() { asynqmw.New(c, asynqmw.WithWait(-1), asynqmw.WithWait(0)) }, "a later option overrides")
	require.NotPanics(t, func() {
		asynqmw.New(c, asynqmw.WithPermits(2), asynqmw.WithDedupWindow(time.Minute), asynqmw.WithPermits(1))
	},
		"a dedup window with a limit of 1")
	quorum := lockmw.NewQuorum([]redis.UniversalClient{rdb})
	defer quorum.Close()
	require.NotPanics(t, func() { asynqmw.New(quorum, asynqmw.WithPermits(1)) }, "a limit of 1 on a quorum client")
	require.NotPanics(t, func() { asynqmw.New(quorum, asynqmw.WithPermits(3)) }, "a limit above 1 on a quorum client: its permits are quorum mutexes")
}

func TestIsBusy(t *testing.T) {
	t.Parallel()
	// A real busy error, from a key held by another client, is tested in
	// TestDefaults; here, what IsBusy does not take for one.
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"another error", errors.New("x"), false},
		{"a bare lockmw.ErrNotAcquired from the handler", lockmw.ErrNotAcquired, false},
		{"ErrBusy", asynqmw.ErrBusy, true},
		{"a wrapped ErrBusy", fmt.Errorf("ctx: %w", asynqmw.ErrBusy), true},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, asynqmw.IsBusy(tc.err)) })
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	busy := fmt.Errorf("wrapped: %w", asynqmw.ErrBusy)
	task := asynq.NewTask("t", nil)
	f := asynqmw.RetryDelay(time.Second, func(n int, err error, _ *asynq.Task) time.Duration { return time.Duration(n) * time.Minute })
	require.Equal(t, time.Second, f(3, busy, task))
	require.Equal(t, 3*time.Minute, f(3, errors.New("x"), task))

	t.Run("a nil next falls back to asynq's default", func(t *testing.T) {
		f := asynqmw.RetryDelay(0, nil)
		require.Equal(t, time.Duration(0), f(0, busy, task))
		require.GreaterOrEqual(t, f(0, errors.New("x"), task), 15*time.Second)
	})
}

func TestBusyPolicyString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Retry", asynqmw.Retry.String())
	require.Equal(t, "Skip", asynqmw.Skip.String())
	require.Equal(t, "BusyPolicy(7)", asynqmw.BusyPolicy(7).String())
}

func TestDefaultKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := asynqmw.DefaultKey(ctx, asynq.NewTask("a", []byte("x")))
	require.Equal(t, "a:2d711642b726b04401627ca9fbac32f5", k) // sha256("x")
	require.Equal(t, k, asynqmw.DefaultKey(ctx, asynq.NewTask("a", []byte("x"), asynq.MaxRetry(3), asynq.Queue("q"))))
	require.NotEqual(t, k, asynqmw.DefaultKey(ctx, asynq.NewTask("b", []byte("x"))))
	require.NotEqual(t, k, asynqmw.DefaultKey(ctx, asynq.NewTask("a", []byte("y"))))
}
