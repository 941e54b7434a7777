package lockmw

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var errDown = errors.New("redis down")

var fastRetry = releaseRetry{first: time.Millisecond, max: 4 * time.Millisecond}

// startRetry runs r.start with a release that fails with errs in turn (then
// succeeds) and returns the number of calls once it has ended.
func startRetry(t *testing.T, hctx context.Context, r releaseRetry, done <-chan struct{}, errs ...error) int {
	t.Helper()
	var calls atomic.Int32
	ended := make(chan struct{})
	r.start(hctx, func() error {
		n := int(calls.Add(1))
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, done, func() { close(ended) })
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the retrying never ended")
	}
	return int(calls.Load())
}

func TestReleaseRetryStart(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	t.Run("until it succeeds", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 4, startRetry(t, bg, fastRetry, nil, errDown, errDown, errDown))
	})
	t.Run("at most tries times", func(t *testing.T) {
		t.Parallel()
		r := fastRetry
		r.tries = 2
		assert.Equal(t, 2, startRetry(t, bg, r, nil, errDown, errDown, errDown))
	})
	t.Run("not after the hold was lost", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 2, startRetry(t, bg, fastRetry, nil, errDown, ErrLockLost, errDown))
	})
	t.Run("not after a release finds nothing held", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 1, startRetry(t, bg, fastRetry, nil, ErrNotHeld, errDown))
	})
	t.Run("not after a reply retrying cannot fix", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 2, startRetry(t, bg, fastRetry, nil, errDown, reply("WRONGTYPE Operation against a key holding the wrong kind of value"), errDown))
	})
	t.Run("after a transient reply", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 2, startRetry(t, bg, fastRetry, nil, reply("LOADING Redis is loading the dataset in memory")))
	})
	t.Run("not after the Client closed", func(t *testing.T) {
		t.Parallel()
		hctx, cancel := context.WithCancelCause(bg)
		cancel(ErrClosed)
		assert.Equal(t, 1, startRetry(t, hctx, fastRetry, nil, errDown, errDown))
	})
	t.Run("no longer once done is closed", func(t *testing.T) {
		t.Parallel()
		done := make(chan struct{})
		close(done)
		assert.Equal(t, 0, startRetry(t, bg, releaseRetry{first: time.Hour, max: time.Hour}, done, errDown))
	})
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	closed, cancel := context.WithCancelCause(bg)
	cancel(ErrClosed)
	for _, tc := range []struct {
		name string
		hctx context.Context
		err  error
		want bool
	}{
		{"a release that succeeded", bg, nil, false},
		{"a Redis error", bg, errDown, true},
		{"a lost hold", bg, ErrLockLost, false},
		{"nothing held", bg, ErrNotHeld, false},
		{"an invalid name", bg, ErrInvalidName, false},
		{"a Redis error after Close", closed, errDown, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, retryable(tc.hctx, tc.err)) })
	}
}
