package redisson

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("starts without a permit", func(t *testing.T) {
		ok, err := newLatch().tryAcquire(ctx, 0)
		require.NoError(t, err)
		assert.False(t, ok)
	})
	t.Run("keeps a permit released with no one waiting, once", func(t *testing.T) {
		l := newLatch()
		l.release()
		l.release()
		assert.Equal(t, 2, l.available())
		for range 2 {
			ok, err := l.tryAcquire(ctx, 0)
			require.NoError(t, err)
			assert.True(t, ok)
		}
		ok, _ := l.tryAcquire(ctx, 0)
		assert.False(t, ok, "one permit per release")
	})
	t.Run("waits at least the timeout", func(t *testing.T) {
		start := time.Now()
		ok, err := newLatch().tryAcquire(ctx, 20*time.Millisecond)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	})
	t.Run("returns ctx's error when ctx ends", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := newLatch().tryAcquire(cctx, -1)
		assert.ErrorIs(t, err, context.Canceled)
	})
}
