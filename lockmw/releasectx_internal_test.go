package lockmw

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testKey struct{}

// releaseCtxOf is a release context of a level whose hold context is hold,
// on a clock of timeout.
func releaseCtxOf(timeout time.Duration, hold context.Context) context.Context {
	c := &Client{releases: newReleaseClock(timeout, 0)}
	return c.releaseContext(new(level), hold, false)
}

func TestReleaseContextIsDetachedFromTheHold(t *testing.T) {
	hold, cancel := context.WithCancelCause(context.WithValue(context.Background(), testKey{}, "span"))
	rctx := releaseCtxOf(time.Hour, hold)
	child, stop := context.WithCancel(rctx)
	defer stop()
	cancel(ErrLockLost)

	assert.Equal(t, "span", rctx.Value(testKey{}), "the hold context's values")
	assert.NoError(t, rctx.Err(), "not ended by the hold context")
	assert.NoError(t, context.Cause(rctx))
	assert.NoError(t, child.Err(), "a context derived from it is not ended by the hold context")
	dl, ok := rctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Hour), dl, 2*maxReleaseTick)
}

func TestReleaseContextEndsAtTheReleaseTimeout(t *testing.T) {
	hold, cancel := context.WithCancelCause(context.Background())
	cancel(ErrLockLost)
	start := time.Now()
	rctx := releaseCtxOf(50*time.Millisecond, hold)
	child, stop := context.WithCancel(rctx)
	defer stop()
	select {
	case <-child.Done(): // through rctx's AfterFunc, no goroutine
	case <-time.After(time.Minute):
		t.Fatal("the release context did not end")
	}
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.ErrorIs(t, rctx.Err(), context.DeadlineExceeded)
	assert.ErrorIs(t, context.Cause(rctx), context.DeadlineExceeded, "its own cause, not the hold context's")
	assert.False(t, errors.Is(context.Cause(child), ErrLockLost))
}

func TestReleaseClockSharesATickAndReleaseContextsDoNot(t *testing.T) {
	k := newReleaseClock(time.Hour, 0)
	assert.Equal(t, maxReleaseTick, k.tick)
	a, b := k.now(), k.now()
	if a.n == b.n {
		assert.Same(t, a, b, "one deadline context per tick")
	}
	c := &Client{releases: k}
	var lvl level
	first := c.releaseContext(&lvl, context.Background(), false)
	assert.Same(t, &lvl.rctx, first, "the first release's context lives in the level")
	retry := c.releaseContext(&lvl, context.Background(), false)
	assert.NotSame(t, first, retry, "a retry's is its own: the first may still be read")
	assert.Equal(t, 10*time.Microsecond, newReleaseClock(time.Millisecond, 0).tick)
}
