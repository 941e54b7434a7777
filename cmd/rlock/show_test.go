package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shown is show's JSON object, as a consumer reads it.
type shown struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	TTLMS    int64  `json:"ttl_ms"`
	Token    string `json:"token"`
	Metadata string `json:"metadata"`
	TraceID  string `json:"trace_id"`
	// RedissonWaiting counts the clients waiting on Redisson's channel that
	// are not rlock's.
	RedissonWaiting int64  `json:"redisson_waiting"`
	Free            *int64 `json:"free"`
	Holders         []struct {
		Field       string `json:"field"`
		Client      string `json:"client"`
		Count       int64  `json:"count"`
		Rlock       bool   `json:"rlock"`
		Evidence    string `json:"evidence"`
		Expires     string `json:"expires"`
		RemainingMS int64  `json:"remaining_ms"`
	} `json:"holders"`
	Waiters []struct {
		Position    int    `json:"position"`
		Field       string `json:"field"`
		Client      string `json:"client"`
		Deadline    string `json:"deadline"`
		RemainingMS int64  `json:"remaining_ms"`
	} `json:"waiters"`
}

// show runs "show -json name" and parses its one line.
func show(t *testing.T, conn []string, name string) shown {
	t.Helper()
	return showJSON[shown](t, conn, name)
}

// showJSON runs "show -json name" and parses its one line as a T.
func showJSON[T any](t *testing.T, conn []string, name string) T {
	t.Helper()
	r := run(t, nil, args(conn, "-json", "show", name)...)
	require.Equal(t, 0, r.code, "show %s: %s", name, r.stderr)
	ls := lines(r.stdout)
	require.Len(t, ls, 1, "one JSON line")
	var s T
	decode(t, ls[0], &s)
	return s
}

func TestShowALockHeldByRlockWithItsWaitersInOrder(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			holderC := newClient(t, rdb, withTrace())
			waiterC := newClient(t, rdb)
			name := unique("show:invoice:" + topo.name)
			m := holderC.Mutex(name, lockmw.WithFencing())
			hold, err := m.Lock(testsupport.Ctx(t))
			require.NoError(t, err)
			testsupport.Eventually(t, 10*time.Second, "the metadata is stored", func() bool {
				return rdb.HGet(testsupport.Ctx(t), name, "rlock:meta").Val() == traceparent
			})
			first := waitLock(t, rdb, waiterC.Mutex(name, lockmw.WithFencing()), 1)
			second := waitLock(t, rdb, holderC.Mutex(name, lockmw.WithFencing()), 2)
			q := queue(t, rdb, name)

			s := show(t, topo.flags(), name)
			assert.Equal(t, "lock", s.Kind)
			require.Len(t, s.Holders, 1)
			assert.Equal(t, holderOf(t, m), s.Holders[0].Field)
			assert.Equal(t, holderC.ID(), s.Holders[0].Client)
			assert.EqualValues(t, 1, s.Holders[0].Count)
			assert.True(t, s.Holders[0].Rlock, "a fenced hold is rlock's")
			assert.NotEmpty(t, s.Token)
			assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.TraceID)
			assert.Greater(t, s.TTLMS, int64(0))
			require.Len(t, s.Waiters, 2)
			assert.Equal(t, q, []string{s.Waiters[0].Field, s.Waiters[1].Field}, "in queue order")
			assert.Equal(t, waiterC.ID(), s.Waiters[0].Client)
			assert.Equal(t, holderC.ID(), s.Waiters[1].Client)
			for _, w := range s.Waiters {
				assert.Positive(t, w.RemainingMS)
				_, err := time.Parse(time.RFC3339, w.Deadline)
				assert.NoError(t, err, "deadline %q", w.Deadline)
			}

			text := run(t, nil, args(topo.flags(), "show", name)...)
			require.Equal(t, 0, text.code, text.stderr)
			assert.Contains(t, text.stdout, "trace id 4bf92f3577b34da6a3ce929d0e0e4736")
			assert.Contains(t, text.stdout, "waiters (2, in order)")

			require.NoError(t, m.Unlock(hold))
			h1 := testsupport.Recv(t, first, 10*time.Second, "the first waiter's hold")
			require.NotNil(t, h1)
			require.NoError(t, waiterC.Mutex(name).Unlock(h1))
			h2 := testsupport.Recv(t, second, 10*time.Second, "the second waiter's hold")
			require.NotNil(t, h2)
			require.NoError(t, holderC.Mutex(name).Unlock(h2))
		})
	}
}

func TestShowARedissonLockWrittenByHand(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			name := "show:java:" + topo.name
			field := "5a1ad1f0-0000-4000-8000-0000000000aa:57"
			require.NoError(t, rdb.HSet(ctx, name, field, 2).Err())
			require.NoError(t, rdb.PExpire(ctx, name, time.Minute).Err())

			s := show(t, topo.flags(), name)
			require.Len(t, s.Holders, 1)
			assert.Equal(t, field, s.Holders[0].Field)
			assert.EqualValues(t, 2, s.Holders[0].Count, "a reentrant Java hold")
			assert.False(t, s.Holders[0].Rlock, "nothing shows an rlock client")
			assert.Empty(t, s.Token)
			assert.Greater(t, s.TTLMS, int64(50_000))

			text := run(t, nil, args(topo.flags(), "show", name)...)
			assert.Contains(t, text.stdout, "client: unknown (Redisson layout")
		})
	}
}

func TestShowASemaphoreWithRlockAndRedissonPermits(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			name := unique("show:export:" + topo.name)
			c := newClient(t, rdb)
			sem := c.Semaphore(name, 2)
			permit, err := sem.TryLock(ctx, 0, 0)
			require.NoError(t, err)
			rc := redisson.NewClient(rdb)
			if topo.name == "3-master cluster" {
				rc = redisson.NewShardedClient(rdb)
			}
			t.Cleanup(func() { _ = rc.Close() })
			id, ok, err := rc.GetPermitExpirableSemaphore(name).TryAcquire(ctx, 0, time.Minute)
			require.NoError(t, err)
			require.True(t, ok, "Redisson takes the second permit")

			s := show(t, topo.flags(), name)
			assert.Equal(t, "semaphore", s.Kind)
			require.NotNil(t, s.Free)
			assert.EqualValues(t, 0, *s.Free)
			require.Len(t, s.Holders, 2)
			byRlock := map[bool]string{}
			for _, h := range s.Holders {
				byRlock[h.Rlock] = h.Field
				assert.NotEmpty(t, h.Expires)
			}
			assert.True(t, strings.HasPrefix(byRlock[true], c.ID()+":"), "rlock's permit is its holder's field")
			assert.Equal(t, id, byRlock[false], "Redisson's permit ID (16 raw bytes), in hex")
			require.NoError(t, sem.Unlock(permit))
		})
	}
}

func TestShowOfWhatIsNotLockedExits1(t *testing.T) {
	rdb := redisClient(t, "single node")
	ctx := testsupport.Ctx(t)
	require.NoError(t, rdb.Set(ctx, "show:plain", "hello", 0).Err())
	require.NoError(t, rdb.HSet(ctx, "show:profile", "email", "a@b.c").Err())
	require.NoError(t, rdb.Set(ctx, "show:counter", "12", 0).Err())
	for name, why := range map[string]string{
		"show:nothing-here": "show:nothing-here: not locked\n",
		"show:plain":        "not a semaphore's count",
		"show:profile":      "a hash that is not a lock",
		"show:counter":      "an idle semaphore, or any counter",
	} {
		r := run(t, nil, args(onSingle(), "show", name)...)
		assert.Equal(t, 1, r.code, name)
		assert.Contains(t, r.stderr, why, name)
		assert.Len(t, lines(r.stderr), 1, "one line")
		assert.Empty(t, r.stdout)
	}
}

func TestShowCountsRedissonClientsWaiting(t *testing.T) {
	rdb := redisClient(t, "single node")
	c := newClient(t, rdb)
	name := unique("show:mixed")
	m := c.Mutex(name)
	hold, err := m.Lock(testsupport.Ctx(t))
	require.NoError(t, err)
	rc := redisson.NewClient(rdb)
	ctx, cancel := context.WithCancel(testsupport.Ctx(t))
	done := make(chan error, 1)
	go func() { done <- rc.GetLock(name).Lock(ctx, 7, time.Minute) }() // a Java thread waits

	testsupport.Eventually(t, 10*time.Second, "the Redisson client is counted", func() bool {
		return show(t, onSingle(), name).RedissonWaiting == 1
	})
	cancel()
	assert.Error(t, testsupport.Recv(t, done, 10*time.Second, "the Redisson waiter gives up"))
	require.NoError(t, rc.Close())
	require.NoError(t, m.Unlock(hold))
}
