package devredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/examples/internal/devredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The embedded server expires keys in real time.
func TestEmbeddedTTLFollowsClock(t *testing.T) {
	t.Setenv(devredis.EnvAddr, "")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	c, closeFn, err := devredis.Client(ctx)
	require.NoError(t, err)
	defer closeFn()

	ok, err := c.SetNX(ctx, "k", "v", 50*time.Millisecond).Result()
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 1, c.Exists(ctx, "k").Val())

	deadline := time.Now().Add(2 * time.Second)
	for {
		n, err := c.Exists(ctx, "k").Result()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "key with PX 50 still there after 2s")
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBadAddr(t *testing.T) {
	t.Setenv(devredis.EnvAddr, "127.0.0.1:1")
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, _, err := devredis.Client(ctx)
	require.ErrorContains(t, err, "REDIS_ADDR=127.0.0.1:1")
}
