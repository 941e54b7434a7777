package lockmw

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/internal/rdbdump"
)

// lockDump's payloads are read by a real server, which checks them deeply
// (sanitize-dump-payload), for fields on both sides of each RDB length
// encoding (1, 2 and 5 bytes) and each listpack string encoding (6, 12 and
// 32 bits of length) and back-length (1, 2 and 3 bytes; an entry of 16383
// bytes takes 3, as Redis writes it).
func TestLockDumpRestores(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	require.NoError(t, rdb.ConfigSet(ctx, "sanitize-dump-payload", "yes").Err())
	for _, kind := range []rdbdump.Kind{rdbdump.Listpack, rdbdump.Plain} {
		for _, n := range []int{1, 63, 64, 125, 126, 4095, 4096, 16377, 16378, 16383, 16384, 70000} {
			field := strings.Repeat("f", n-1) + "\xff" // any bytes
			require.NoError(t, rdb.Restore(ctx, "dumped", time.Minute, string(rdbdump.Payload(field, kind))).Err(), "%s, field of %d bytes", kind, n)
			got, err := rdb.HGetAll(ctx, "dumped").Result()
			require.NoError(t, err)
			assert.Equal(t, map[string]string{field: "1"}, got, "%s, field of %d bytes", kind, n)
			ttl, err := rdb.PTTL(ctx, "dumped").Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, 50*time.Second)
			require.NoError(t, rdb.Del(ctx, "dumped").Err())
		}
	}
}

// A Client acquires with the listpack payload where the server reads it
// (Redis 7 here), and with the plain hash where the server is older: a hook
// makes each listpack payload's RDB version one this server does not know
// (as RDB 10 is to Redis 6), and the server's own refusal of the probe
// makes the Client send the plain one. Both stay on the fast path.
func TestRestorePayloadForTheServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, older := range []bool{false, true} {
		rdb := srv.NewClient()
		restores := &restoreHook{newer: older}
		rdb.AddHook(restores)
		c := New(rdb)
		m := c.Mutex(fmt.Sprintf("payload-%v", older))
		hctx, err := m.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, m.Unlock(hctx))
		want := rdbdump.Listpack
		if older {
			want = rdbdump.Plain
		}
		assert.Equal(t, want, rdbdump.Kind(c.dumpKind.Load()), "older server: %v", older)
		assert.False(t, c.fastOff.Load(), "older server: %v", older)
		assert.Equal(t, int64(1), restores.made.Load(), "older server: %v: the lock was made by RESTORE", older)
		require.NoError(t, c.Close())
	}
}

// restoreHook counts the locks RESTORE made (the probe's aside), and with
// newer set gives each listpack payload an RDB version the server does not
// know.
type restoreHook struct {
	newer bool
	made  atomic.Int64
}

func (h *restoreHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *restoreHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.newer {
			h.rewrite(cmd)
		}
		err := next(ctx, cmd)
		h.count(cmd)
		return err
	}
}

func (h *restoreHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.newer {
				h.rewrite(cmd)
			}
		}
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return err
	}
}

// count counts cmd when it is a RESTORE that made a lock (not the probe's).
func (h *restoreHook) count(cmd redis.Cmder) {
	if cmd.Name() == "restore" && cmd.Err() == nil && !strings.HasPrefix(fmt.Sprint(cmd.Args()[1]), "rlock_probe:") {
		h.made.Add(1)
	}
}

// rewrite sets a listpack RESTORE payload's RDB version to 99, with its
// checksum.
func (h *restoreHook) rewrite(cmd redis.Cmder) {
	args := cmd.Args()
	if cmd.Name() != "restore" || len(args) < 4 {
		return
	}
	var payload []byte
	switch p := args[3].(type) {
	case string:
		payload = []byte(p)
	case *restoreLine:
		payload = append([]byte(nil), p.dump...)
	default:
		return
	}
	if payload[0] != rdbdump.TypeHashListpack {
		return
	}
	body := payload[:len(payload)-10]
	payload = binary.LittleEndian.AppendUint16(body, 99)
	args[3] = string(binary.LittleEndian.AppendUint64(payload, rdbdump.CRC64(payload)))
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

// BenchmarkRestorePayload restores lock hashes of each payload encoding in
// pipelines of 100 (RESTORE and UNLINK of a key each) and reports the
// server's time per RESTORE (INFO commandstats): the plain hash is read
// field by field, the listpack copied.
func BenchmarkRestorePayload(b *testing.B) {
	for _, kind := range []rdbdump.Kind{rdbdump.Listpack, rdbdump.Plain} {
		b.Run(strings.Fields(kind.String())[0], func(b *testing.B) {
			srv := redistest.Start(b)
			ctx := context.Background()
			rdb := srv.Client()
			payload := string(rdbdump.Payload("0123456789abcdef0123456789abcdef:1000", kind))
			require.NoError(b, rdb.ConfigResetStat(ctx).Err())
			b.ResetTimer()
			for i := 0; i < b.N; i += 100 {
				_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := i; j < min(i+100, b.N); j++ {
						key := "payload-" + strconv.Itoa(j)
						p.Restore(ctx, key, time.Minute, payload)
						p.Unlink(ctx, key)
					}
					return nil
				})
				require.NoError(b, err)
			}
			b.StopTimer()
			stats, err := srv.CommandStats(ctx)
			require.NoError(b, err)
			st := stats["restore"]
			b.ReportMetric(float64(st.Usec)/float64(st.Calls), "redis-µs/restore")
		})
	}
}
