package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reader's field whose level key has expired holds nothing, though the
// field stays in a hash another reader keeps: a read hold handed over and
// not claimed within its window (the crash suite's TestCrashRWMutex found
// it on a loaded machine: its reader's retry "won" by renewing a level key
// that no longer existed, a later release freed the hash, and its Unlock
// found the hold gone before any key it had could expire). Its renewal and
// claim fail, leaving the queue keeps nothing, and its next attempt grants
// it a fresh level key.
func TestRWReaderWithAnExpiredLevelHoldsNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := New(srv.NewClient())
	t.Cleanup(func() { _ = c.Close() })
	rw := c.RWMutex("rw-expired")
	rdb := srv.Client()
	const dead, live = "dead-client:1", "live-client:1"
	hash := rw.r.k.lock
	require.NoError(t, rdb.HSet(ctx, hash, "mode", "read", dead, "1", live, "1").Err())
	require.NoError(t, rdb.PExpire(ctx, hash, time.Minute).Err()) // kept by the live reader
	require.NoError(t, rdb.Set(ctx, rw.r.k.timeouts+live+":rwlock_timeout:1", "1", time.Minute).Err())
	deadKey := rw.r.k.timeouts + dead + ":rwlock_timeout:1" // never set: expired

	res, err := scripts.Eval(ctx, c.be, scripts.RWRenew, []string{hash, hash}, int64(30000), dead, live).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 1}, res, "the reader whose level expired is not renewed; the live one is")
	_, ok := rw.r.claimOnce(ctx, attempt{field: dead, ttl: 30 * time.Second})
	assert.False(t, ok, "nor claimed")
	_, kept, err := rw.r.leaveOnce(ctx, dead, true, 30*time.Second)
	require.NoError(t, err)
	assert.False(t, kept, "nor kept by leaving the queue")

	require.NoError(t, rdb.HSet(ctx, hash, dead, "1").Err()) // the field again, its level key still gone
	r, err := rw.r.try(ctx, attempt{field: dead, ttl: 30 * time.Second, enqueue: true, queued: true})
	require.NoError(t, err)
	require.True(t, r.won, "beside a live reader, the attempt takes the read side")
	pttl, err := rdb.PTTL(ctx, deadKey).Result()
	require.NoError(t, err)
	assert.Greater(t, pttl, 20*time.Second, "with a fresh level key of its full TTL")
}
