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

// The embedded server expires keys in real time: a key set with PX is
// there until its TTL has passed and gone after, with no FastForward. The
// first check is judged only when it returned within the TTL of the
// SETNX's send (a loaded machine can take longer); the second polls until
// the key is gone, the context ending the test if it never goes.
func TestEmbeddedTTLFollowsClock(t *testing.T) {
	t.Setenv(devredis.EnvAddr, "")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	c, closeFn, err := devredis.Client(ctx)
	require.NoError(t, err)
	defer closeFn()

	const ttl = 300 * time.Millisecond
	sent := time.Now()
	ok, err := c.SetNX(ctx, "k", "v", ttl).Result()
	require.NoError(t, err)
	require.True(t, ok)
	n, err := c.Exists(ctx, "k").Result()
	require.NoError(t, err)
	if took := time.Since(sent); took < ttl {
		require.EqualValues(t, 1, n, "the key is there within its TTL")
	} else {
		t.Logf("SETNX and EXISTS took %v, past the TTL: the key's presence is not judged", took)
	}

	for {
		n, err := c.Exists(ctx, "k").Result()
		require.NoError(t, err, "the key with PX %v still there", ttl)
		if n == 0 {
			require.GreaterOrEqual(t, time.Since(sent), ttl, "gone before its TTL")
			return
		}
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
