package lockmw

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockDump's payload is read by a real server for fields on both sides of
// each RDB length encoding (1, 2 and 5 bytes).
func TestLockDumpRestores(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	for _, n := range []int{1, 63, 64, 16383, 16384, 70000} {
		field := strings.Repeat("f", n-1) + "\xff" // any bytes
		require.NoError(t, rdb.Restore(ctx, "dumped", time.Minute, string(lockDump(field))).Err(), "field of %d bytes", n)
		got, err := rdb.HGetAll(ctx, "dumped").Result()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{field: "1"}, got, "field of %d bytes", n)
		ttl, err := rdb.PTTL(ctx, "dumped").Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 50*time.Second)
		require.NoError(t, rdb.Del(ctx, "dumped").Err())
	}
}

// go-redis re-sends a RESTORE whose reply was lost: the re-send finds the
// lock (BUSYKEY), and the acquire script finds it is ours.
func TestResentRestoreWins(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()
	m := c.Mutex("resent-restore")
	field := c.id + ":1000"
	won, err := m.fastAcquire(ctx, attempt{field: field, ttl: time.Minute})
	require.NoError(t, err)
	require.True(t, won)
	won, err = m.fastAcquire(ctx, attempt{field: field, ttl: time.Minute})
	require.NoError(t, err)
	require.False(t, won, "the re-send finds the lock")
	r, err := m.try(ctx, attempt{field: field, fieldArg: field, ttl: time.Minute})
	require.NoError(t, err)
	assert.True(t, r.won, "the script finds our field")
	n, err := srv.Client().HGet(ctx, "resent-restore", field).Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "counted once")
}
