package unlockretry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/unlockretry"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("redis down")

var fast = unlockretry.Policy{First: time.Millisecond, Max: 4 * time.Millisecond}

// start runs Start with a release that fails with errs in turn (then
// succeeds) and returns the number of calls once it has ended.
func start(t *testing.T, hold context.Context, p unlockretry.Policy, done <-chan struct{}, errs ...error) int {
	t.Helper()
	var calls atomic.Int32
	ended := make(chan struct{})
	unlockretry.Start(hold, func() error {
		n := int(calls.Add(1))
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, done, p, func() { close(ended) })
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the retrying never ended")
	}
	return int(calls.Load())
}

func TestStart(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	t.Run("until it succeeds", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 4, start(t, bg, fast, nil, errDown, errDown, errDown))
	})
	t.Run("at most Tries times", func(t *testing.T) {
		t.Parallel()
		p := fast
		p.Tries = 2
		assert.Equal(t, 2, start(t, bg, p, nil, errDown, errDown, errDown))
	})
	t.Run("not after the hold was lost", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 2, start(t, bg, fast, nil, errDown, lockmw.ErrLockLost, errDown))
	})
	t.Run("not after the Client closed", func(t *testing.T) {
		t.Parallel()
		done := make(chan struct{})
		close(done)
		slow := unlockretry.Policy{First: time.Hour, Max: time.Hour}
		assert.Zero(t, start(t, bg, slow, done, errDown))
	})
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	closed, cancel := context.WithCancelCause(context.Background())
	cancel(lockmw.ErrClosed)
	for _, tc := range []struct {
		hold context.Context
		err  error
		want bool
	}{
		{context.Background(), nil, false},
		{context.Background(), errDown, true},
		{context.Background(), lockmw.ErrLockLost, false},
		{context.Background(), lockmw.ErrNotHeld, false},
		{context.Background(), lockmw.ErrInvalidName, false},
		{closed, errDown, false},
	} {
		assert.Equal(t, tc.want, unlockretry.Retryable(tc.hold, tc.err), "%v, cause %v", tc.err, context.Cause(tc.hold))
	}
}

func TestDo(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	err := unlockretry.Do(context.Background(), func() error { return lockmw.ErrLockLost }, nil, fast, func() { close(ended) })
	assert.ErrorIs(t, err, lockmw.ErrLockLost)
	select {
	case <-ended:
	default:
		t.Fatal("a release that failed for good ends at once")
	}

	var calls atomic.Int32
	ended = make(chan struct{})
	err = unlockretry.Do(context.Background(), func() error {
		if calls.Add(1) == 1 {
			return errDown
		}
		return nil
	}, nil, fast, func() { close(ended) })
	assert.ErrorIs(t, err, errDown, "the first error is returned")
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the retry never ended")
	}
	assert.Equal(t, int32(2), calls.Load(), "retried once, then it succeeded")
}
