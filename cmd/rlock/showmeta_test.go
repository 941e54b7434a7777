package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A second traceparent, for a second holder.
const traceparent2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// shownHolders is show's JSON object with the fields every kind shares.
type shownHolders struct {
	Kind        string `json:"kind"`
	TTLMS       *int64 `json:"ttl_ms"`
	ExpiresInMS *int64 `json:"expires_in_ms"`
	Holders     []struct {
		Field       string `json:"field"`
		Metadata    string `json:"metadata"`
		TraceID     string `json:"trace_id"`
		RemainingMS int64  `json:"remaining_ms"`
		ExpiresInMS int64  `json:"expires_in_ms"`
	} `json:"holders"`
	Waiters []struct {
		Deadline         string `json:"deadline"`
		RemainingMS      int64  `json:"remaining_ms"`
		TTLMS            int64  `json:"ttl_ms"`
		EntryExpires     string `json:"entry_expires"`
		EntryExpiresInMS int64  `json:"entry_expires_in_ms"`
		HoldTTLMS        int64  `json:"hold_ttl_ms"`
	} `json:"waiters"`
}

// traces maps show's holders to their trace IDs.
func (s shownHolders) traces() map[string]string {
	out := map[string]string{}
	for _, h := range s.Holders {
		out[h.Field] = h.TraceID
	}
	return out
}

// lsTraces returns ls -json's holders → trace IDs of name.
func lsTraces(t *testing.T, conn []string, name string) map[string]string {
	t.Helper()
	r := run(t, nil, args(conn, "-json", "ls", name)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, lines(r.stdout), 1, r.stdout)
	var e struct {
		Holders  []string `json:"holders"`
		TraceIDs []string `json:"trace_ids"`
	}
	decode(t, lines(r.stdout)[0], &e)
	require.Len(t, e.TraceIDs, len(e.Holders), "one trace ID per holder")
	out := map[string]string{}
	for i, h := range e.Holders {
		out[h] = e.TraceIDs[i]
	}
	return out
}

// putMeta stores metadata for the holders of name in its metadata hash
// (layout.Keys.Meta) as lockmw writes it: by hand until lockmw's writer
// lands, as a field per holder (a permit's member, a read-write lock's
// hash field).
func putMeta(t *testing.T, rdb redis.UniversalClient, k layout.Keys, fields ...string) {
	t.Helper()
	require.NoError(t, rdb.HSet(testsupport.Ctx(t), k.Meta, fields).Err())
	require.NoError(t, rdb.PExpire(testsupport.Ctx(t), k.Meta, time.Minute).Err())
}

// hashFields returns the holder fields of a read-write lock's hash.
func hashFields(t *testing.T, rdb redis.UniversalClient, key string) (writer string, readers []string) {
	t.Helper()
	all, err := rdb.HGetAll(testsupport.Ctx(t), key).Result()
	require.NoError(t, err)
	for f := range all {
		switch {
		case f == "mode":
		case strings.HasSuffix(f, ":write"):
			writer = f
		default:
			readers = append(readers, f)
		}
	}
	return writer, readers
}

// show, ls and the text of show give each holder of a read-write lock its
// trace ID, read from the metadata hash, for each side.
func TestShowAndLsGiveEachReadWriteHolderItsTraceID(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			name := unique("meta:rw:" + topo.name)
			k := layout.RWMutex(name)
			rw1, rw2 := newClient(t, rdb).RWMutex(name), newClient(t, rdb).RWMutex(name)

			r1, err := rw1.RLock(ctx)
			require.NoError(t, err)
			r2, err := rw2.RLock(ctx)
			require.NoError(t, err)
			_, readers := hashFields(t, rdb, name)
			require.Len(t, readers, 2)
			putMeta(t, rdb, k, readers[0], traceparent, readers[1], "not a traceparent")
			s := showJSON[shownHolders](t, topo.flags(), name)
			assert.Equal(t, map[string]string{readers[0]: "4bf92f3577b34da6a3ce929d0e0e4736", readers[1]: ""}, s.traces())
			for _, h := range s.Holders {
				if h.Field == readers[1] {
					assert.Equal(t, "not a traceparent", h.Metadata, "metadata that is not a traceparent is shown as it is")
				}
			}
			assert.Equal(t, s.traces(), lsTraces(t, topo.flags(), name))
			r := run(t, nil, args(topo.flags(), "show", name)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "reader: "+readers[0]+"  count 1  levels ")
			assert.Contains(t, r.stdout, "  trace id 4bf92f3577b34da6a3ce929d0e0e4736  ")
			assert.Contains(t, r.stdout, "  expires in: ")
			require.NoError(t, rw1.RUnlock(r1))
			require.NoError(t, rw2.RUnlock(r2))

			w, err := rw1.Lock(ctx)
			require.NoError(t, err)
			writer, _ := hashFields(t, rdb, name)
			putMeta(t, rdb, k, writer, traceparent2)
			s = showJSON[shownHolders](t, topo.flags(), name)
			assert.Equal(t, map[string]string{writer: "0af7651916cd43dd8448eb211c80319c"}, s.traces())
			assert.Equal(t, s.traces(), lsTraces(t, topo.flags(), name))
			require.NoError(t, rw1.Unlock(w))
		})
	}
}

// A semaphore's permits carry their trace IDs, read from the metadata hash
// by the permit's member.
func TestShowAndLsGiveEachPermitItsTraceID(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			name := unique("meta:sem:" + topo.name)
			k := layout.Semaphore(name)
			sem := newClient(t, rdb).Semaphore(name, 3)
			p1, err := sem.Lock(ctx)
			require.NoError(t, err)
			p2, err := sem.Lock(ctx)
			require.NoError(t, err)
			members, err := rdb.ZRange(ctx, k.Permits, 0, -1).Result()
			require.NoError(t, err)
			require.Len(t, members, 2)
			putMeta(t, rdb, k, members[0], traceparent)

			s := showJSON[shownHolders](t, topo.flags(), name)
			assert.Equal(t, map[string]string{members[0]: "4bf92f3577b34da6a3ce929d0e0e4736", members[1]: ""}, s.traces())
			assert.Equal(t, s.traces(), lsTraces(t, topo.flags(), name))
			for _, h := range s.Holders {
				assert.Equal(t, h.RemainingMS, h.ExpiresInMS, "expires_in_ms beside remaining_ms")
			}
			require.NoError(t, sem.Unlock(p1))
			require.NoError(t, sem.Unlock(p2))
		})
	}
}

// The mutex's trace ID, read from its hash, is its holder's too, and the
// new keys stand beside the old ones with the same values.
func TestShowJSONKeepsOldKeysBesideTheNewOnes(t *testing.T) {
	rdb := redisClient(t, "single node")
	ctx := testsupport.Ctx(t)
	name := unique("meta:mutex")
	m := newClient(t, rdb, withTrace()).Mutex(name)
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	testsupport.Eventually(t, 10*time.Second, "the metadata is stored", func() bool {
		return rdb.HGet(ctx, name, layout.FieldMeta).Val() == traceparent
	})
	got := waitLock(t, rdb, newClient(t, rdb).Mutex(name), 1)

	s := show(t, onSingle(), name)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.TraceID, "the old key")
	n := showJSON[shownHolders](t, onSingle(), name)
	assert.Equal(t, map[string]string{holderOf(t, m): "4bf92f3577b34da6a3ce929d0e0e4736"}, n.traces())
	assert.Equal(t, n.traces(), lsTraces(t, onSingle(), name))
	require.NotNil(t, n.ExpiresInMS)
	assert.Equal(t, *n.TTLMS, *n.ExpiresInMS)
	require.Len(t, n.Waiters, 1)
	w := n.Waiters[0]
	assert.Equal(t, []any{w.Deadline, w.RemainingMS, w.TTLMS}, []any{w.EntryExpires, w.EntryExpiresInMS, w.HoldTTLMS})
	assert.NotEmpty(t, w.EntryExpires)

	require.NoError(t, m.Unlock(h))
	require.NotNil(t, testsupport.Recv(t, got, 10*time.Second, "the waiter's hold"))
}

// Under -namespace the metadata hash is the namespace's, as lockmw names it.
func TestShowReadsTheMetadataHashOfTheNamespace(t *testing.T) {
	rdb := redisClient(t, "single node")
	ctx := testsupport.Ctx(t)
	ns := unique("metans") + ":"
	name := "doc"
	k := layout.Namespaced(ns, layout.RWMutex(layout.InNamespace(ns, name)))
	rw := newClient(t, rdb, lockmw.WithNamespace(ns)).RWMutex(name)
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	writer, _ := hashFields(t, rdb, k.Lock)
	putMeta(t, rdb, k, writer, traceparent)
	// The same field in the metadata hash outside the namespace is not read.
	putMeta(t, rdb, layout.RWMutex(name), writer, traceparent2)

	s := showJSON[shownHolders](t, append(onSingle(), "-namespace", ns), name)
	assert.Equal(t, map[string]string{writer: "4bf92f3577b34da6a3ce929d0e0e4736"}, s.traces())
	require.NoError(t, rw.Unlock(w))
	require.NoError(t, rdb.Del(context.WithoutCancel(ctx), layout.RWMutex(name).Meta).Err())
}
