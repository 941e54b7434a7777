package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shownRW is show's JSON object for a read-write lock.
type shownRW struct {
	Kind    string `json:"kind"`
	Mode    string `json:"mode"`
	TTLMS   int64  `json:"ttl_ms"`
	Holders []struct {
		Field    string  `json:"field"`
		Client   string  `json:"client"`
		Count    int64   `json:"count"`
		Rlock    bool    `json:"rlock"`
		Side     string  `json:"side"`
		LevelsMS []int64 `json:"levels_ms"`
	} `json:"holders"`
	Waiters []struct {
		Field  string `json:"field"`
		Client string `json:"client"`
		Side   string `json:"side"`
	} `json:"waiters"`
}

// showRW runs "show -json name" on a read-write lock.
func showRW(t *testing.T, conn []string, name string) shownRW {
	t.Helper()
	return showJSON[shownRW](t, conn, name)
}

// waitRW starts lock (a side's Lock) in a goroutine and returns the channel
// its hold context arrives on, once the waiter is queued (n entries).
func waitRW(t *testing.T, rdb redis.UniversalClient, name string, n int, lock func(context.Context) (context.Context, error)) <-chan context.Context {
	t.Helper()
	got := make(chan context.Context, 1)
	go func() {
		h, err := lock(testsupport.Ctx(t))
		if err != nil {
			h = nil
		}
		got <- h
	}()
	testsupport.Eventually(t, 10*time.Second, "the waiter is queued", func() bool {
		return len(queue(t, rdb, name)) == n
	})
	return got
}

func TestShowAReadWriteLockReadByRlockWithItsWaiters(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			c1, c2 := newClient(t, rdb), newClient(t, rdb)
			prefix := unique("rwshow:"+topo.name) + ":"
			name := prefix + "prices"
			rw1, rw2 := c1.RWMutex(name), c2.RWMutex(name)
			r1, err := rw1.RLock(ctx)
			require.NoError(t, err)
			r1b, err := rw1.RLock(r1) // a second level of the same reader
			require.NoError(t, err)
			r2, err := rw2.RLock(ctx)
			require.NoError(t, err)
			writer := waitRW(t, rdb, name, 1, rw2.Lock)
			reader := waitRW(t, rdb, name, 2, rw1.RLock) // behind the writer

			s := showRW(t, topo.flags(), name)
			assert.Equal(t, "rwlock", s.Kind)
			assert.Equal(t, "read", s.Mode)
			assert.Greater(t, s.TTLMS, int64(0))
			require.Len(t, s.Holders, 2)
			counts := map[string]int64{}
			for _, h := range s.Holders {
				assert.Equal(t, "read", h.Side)
				counts[h.Client] = h.Count
				require.Len(t, h.LevelsMS, int(h.Count), "one timeout key per level")
				for _, ms := range h.LevelsMS {
					assert.Positive(t, ms, "a live level's TTL")
				}
			}
			assert.Equal(t, map[string]int64{c1.ID(): 2, c2.ID(): 1}, counts)
			require.Len(t, s.Waiters, 2)
			assert.Equal(t, "write", s.Waiters[0].Side)
			assert.Equal(t, c2.ID(), s.Waiters[0].Client)
			assert.True(t, strings.HasSuffix(s.Waiters[0].Field, ":write"), s.Waiters[0].Field)
			assert.Equal(t, "read", s.Waiters[1].Side)
			assert.Equal(t, c1.ID(), s.Waiters[1].Client)

			text := run(t, nil, args(topo.flags(), "show", name)...)
			require.Equal(t, 0, text.code, text.stderr)
			assert.Contains(t, text.stdout, "rwlock "+name)
			assert.Contains(t, text.stdout, "mode: read")
			assert.Contains(t, text.stdout, "reader: "+c1.ID()+":")
			assert.Contains(t, text.stdout, "waiters (2, in order)")

			l := run(t, nil, args(topo.flags(), "-json", "ls", prefix+"*")...)
			require.Equal(t, 0, l.code, l.stderr)
			require.Len(t, lines(l.stdout), 1)
			var e listed
			decode(t, lines(l.stdout)[0], &e)
			assert.Equal(t, "rwlock", e.Kind)
			assert.Len(t, e.Holders, 2)
			assert.EqualValues(t, 2, e.Waiters)
			assert.Contains(t, lines(l.stdout)[0], `"mode":"read"`)

			u := run(t, nil, args(topo.flags(), "unlock", "-y", name)...)
			assert.Equal(t, 2, u.code)
			assert.Contains(t, u.stderr, "a read-write lock (mode read)")
			assert.EqualValues(t, 1, rdb.Exists(ctx, name).Val(), "left as it was")

			require.NoError(t, rw1.RUnlock(r1b))
			require.NoError(t, rw1.RUnlock(r1))
			require.NoError(t, rw2.RUnlock(r2))
			w := testsupport.Recv(t, writer, 10*time.Second, "the writer's hold")
			require.NotNil(t, w)
			require.NoError(t, rw2.Unlock(w))
			r := testsupport.Recv(t, reader, 10*time.Second, "the queued reader's hold")
			require.NotNil(t, r)
			require.NoError(t, rw1.RUnlock(r))
		})
	}
}

func TestShowAReadWriteLockWrittenByAWriterThatReads(t *testing.T) {
	rdb := redisClient(t, "single node")
	ctx := testsupport.Ctx(t)
	c := newClient(t, rdb, lockmw.WithClientID("rw-writer"))
	name := unique("rwshow:writer")
	rw := c.RWMutex(name)
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	r, err := rw.RLock(w) // the writer takes the read side too
	require.NoError(t, err)

	s := showRW(t, onSingle(), name)
	assert.Equal(t, "rwlock", s.Kind)
	assert.Equal(t, "write", s.Mode)
	require.Len(t, s.Holders, 2)
	assert.Equal(t, "write", s.Holders[0].Side, "the writer first")
	assert.True(t, strings.HasSuffix(s.Holders[0].Field, ":write"), s.Holders[0].Field)
	assert.Equal(t, "rw-writer", s.Holders[0].Client)
	assert.True(t, s.Holders[0].Rlock, "the client ID is not a UUID")
	assert.Nil(t, s.Holders[0].LevelsMS, "a writer has no level keys")
	assert.Equal(t, "read", s.Holders[1].Side)
	assert.Equal(t, strings.TrimSuffix(s.Holders[0].Field, ":write"), s.Holders[1].Field, "the writer's own reader field")
	require.Len(t, s.Holders[1].LevelsMS, 1)
	assert.Empty(t, s.Waiters)

	text := run(t, nil, args(onSingle(), "show", name)...)
	require.Equal(t, 0, text.code, text.stderr)
	assert.Contains(t, text.stdout, "mode: write")
	assert.Contains(t, text.stdout, "writer: rw-writer:")

	l := run(t, nil, args(onSingle(), "ls", name)...)
	require.Equal(t, 0, l.code, l.stderr)
	assert.Contains(t, l.stdout, "rwlock")
	assert.Contains(t, l.stdout, "write: "+s.Holders[0].Field)

	require.NoError(t, rw.RUnlock(r))
	require.NoError(t, rw.Unlock(w))
}

func TestShowAReadWriteLockOfRedisson(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			rc := redisson.NewClient(rdb)
			if topo.name == "3-master cluster" {
				rc = redisson.NewShardedClient(rdb)
			}
			t.Cleanup(func() { _ = rc.Close() })
			read, write := unique("rwshow:java:read"), unique("rwshow:java:write")
			rl := rc.GetReadWriteLock(read).ReadLock()
			require.NoError(t, rl.Lock(ctx, 7, time.Minute))
			require.NoError(t, rl.Lock(ctx, 7, 30*time.Second)) // a second level, a shorter lease
			wl := rc.GetReadWriteLock(write).WriteLock()
			require.NoError(t, wl.Lock(ctx, 9, time.Minute))

			s := showRW(t, topo.flags(), read)
			assert.Equal(t, "rwlock", s.Kind)
			assert.Equal(t, "read", s.Mode)
			require.Len(t, s.Holders, 1)
			h := s.Holders[0]
			assert.Equal(t, rc.ID()+":7", h.Field)
			assert.EqualValues(t, 2, h.Count)
			assert.False(t, h.Rlock, "nothing shows an rlock client")
			require.Len(t, h.LevelsMS, 2)
			assert.Greater(t, h.LevelsMS[0], int64(30_000), "level 1's lease: a minute")
			assert.LessOrEqual(t, h.LevelsMS[1], int64(30_000), "level 2's lease: 30 s")
			assert.Positive(t, h.LevelsMS[1])

			s = showRW(t, topo.flags(), write)
			assert.Equal(t, "write", s.Mode)
			require.Len(t, s.Holders, 1)
			assert.Equal(t, rc.ID()+":9:write", s.Holders[0].Field)
			assert.Equal(t, rc.ID(), s.Holders[0].Client)
			assert.Greater(t, s.TTLMS, int64(30_000))

			require.NoError(t, rl.Unlock(ctx, 7))
			require.NoError(t, rl.Unlock(ctx, 7))
			require.NoError(t, wl.Unlock(ctx, 9))
		})
	}
}
