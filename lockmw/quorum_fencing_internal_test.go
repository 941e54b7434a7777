package lockmw

import (
	"errors"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a quorum the token is one above the largest counter of the majority
// that answered the acquisition (its acquire replies, then its fence round),
// and the fence writes it, with the counter's TTL, to every master whose
// counter is not above it. A master not waited for may keep a larger counter
// of its own: that is sound, for only a majority needs the token (any two
// majorities share a master, and the next fence finds the token there), but
// it is why the counters need not all end at the token. What holds: every
// master that answered the acquisition ends at the token, none below it, and
// the next token is greater.
func TestQuorumFencingCountersExpire(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient()
	}
	c := NewQuorum(rdbs)
	defer c.Close()
	m := c.Mutex("quorum-counter", WithFencing())
	lockToken := func() int64 {
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		tok, ok := m.Token(h)
		require.True(t, ok)
		require.NoError(t, m.Unlock(h))
		return tok
	}
	tok := lockToken()
	counter := func(srv *redistest.Server) int64 { // 0: not there yet (a master that answered late)
		n, err := srv.Client().Get(ctx, "redisson_lock_token:{quorum-counter}").Int64()
		if errors.Is(err, redis.Nil) {
			return 0
		}
		require.NoError(t, err)
		return n
	}
	testsupport.Eventually(t, 30*time.Second, "the fence reached every master", func() bool {
		for _, srv := range srvs {
			if counter(srv) < tok {
				return false
			}
		}
		return true
	})
	at := 0
	for i, srv := range srvs {
		if counter(srv) == tok {
			at++
		}
		ttl, err := srv.Client().PTTL(ctx, "redisson_lock_token:{quorum-counter}").Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, fenceCounterTTL-time.Minute, "master %d", i)
		assert.LessOrEqual(t, ttl, fenceCounterTTL, "master %d", i)
	}
	assert.GreaterOrEqual(t, at, 2, "a majority holds the token itself")
	assert.Greater(t, lockToken(), tok)
}

// The fence round of a quorum acquisition: its token is one above every
// counter of a majority. A master whose counter went past the token the
// acquisition saw (another hold's fence got there first: an acquisition
// that began before that hold's fence and won after the hold ended) makes
// the next round start from that counter, so the token stays above every
// earlier hold's.
func TestQuorumFenceRounds(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient()
	}
	c := NewQuorum(rdbs)
	defer c.Close()
	q := c.store.(*quorumStore)
	m := c.Mutex("fence-rounds", WithFencing())
	const counter = "redisson_lock_token:{fence-rounds}"
	set := func(vals ...int64) {
		for i, v := range vals {
			require.NoError(t, srvs[i].Client().Set(ctx, counter, v, time.Hour).Err())
		}
	}
	get := func(i int) int64 {
		n, err := srvs[i].Client().Get(ctx, counter).Int64()
		require.NoError(t, err)
		return n
	}

	set(100, 90, 80)
	tok, err := q.fence(ctx, m, "f", 100, time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(101), tok, "one round: every counter at most what the acquisition saw")

	set(500, 600, 80) // two masters moved past 200: a majority must be raised above them
	tok, err = q.fence(ctx, m, "f", 200, time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(601), tok, "a second round from the largest counter met")
	testsupport.Eventually(t, 30*time.Second, "the token on every master", func() bool {
		return get(0) == 601 && get(1) == 601 && get(2) == 601
	})
}
