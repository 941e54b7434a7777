package lockmw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runAcquire runs quorumacquire.lua's call on one master and reads its reply.
func runAcquire(t *testing.T, ctx context.Context, rdb redis.UniversalClient, call scripts.Call) quorumAcquired {
	t.Helper()
	res, err := redis.NewScript(scripts.QuorumAcquire.Source()).Run(ctx, rdb, call.Keys, call.Args...).Slice()
	require.NoError(t, err)
	r, err := parseQuorumAcquire(res)
	require.NoError(t, err)
	return r
}

// The mark on one master (quorumacquire.lua): the first-ranked contender's
// re-ask that finds the lock busy marks the master, which then refuses every
// other field — busy, held by the marked one, for what is left of the mark,
// with the mark's age — also once the holder's key is gone, while the marked
// field takes it at once; its win, or its end (quorumend.lua), removes the
// mark, and a mark whose contender died ends by itself.
func TestQuorumMarkRefusesOthers(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	c := NewQuorum([]redis.UniversalClient{rdb})
	defer c.Close()
	q := c.store.(*quorumStore)
	m := c.Mutex("q-mark")
	call := func(field string, try int64) scripts.Call {
		return q.acquireCall(m, attempt{field: field, ttl: time.Minute}, try)
	}
	raw := srv.Client()

	require.True(t, runAcquire(t, ctx, rdb, call("h", 1)).reply.won)
	r := runAcquire(t, ctx, rdb, markCall(call("k", 1), time.Minute))
	require.False(t, r.reply.won)
	assert.Equal(t, "h", r.reply.holder, "the marker is told the real holder")
	assert.False(t, r.mark)
	require.True(t, strings.HasPrefix(raw.HGet(ctx, m.k.waiters, "rlock:mark").Val(), "k|"), "the busy master is marked")
	assert.LessOrEqual(t, raw.PTTL(ctx, m.k.waiters).Val(), time.Minute, "the mark expires on the server")

	r = runAcquire(t, ctx, rdb, call("r", 1))
	require.False(t, r.reply.won)
	assert.Equal(t, "k", r.reply.holder, "another field is refused, held by the marked one")
	assert.True(t, r.mark, "and told it was a mark")
	assert.Greater(t, r.reply.pttl, 50*time.Second, "for what is left of the mark")
	assert.GreaterOrEqual(t, r.age, time.Duration(0), "the mark's age ranks it fresh")

	require.NoError(t, raw.Del(ctx, m.k.lock).Err()) // the holder's key goes
	r = runAcquire(t, ctx, rdb, call("r", 2))
	require.False(t, r.reply.won, "a free master that is marked is refused")
	assert.Equal(t, "k", r.reply.holder)
	require.True(t, runAcquire(t, ctx, rdb, call("k", 2)).reply.won, "the marked field takes it")
	assert.False(t, raw.HExists(ctx, m.k.waiters, "rlock:mark").Val(), "its win removes the mark")
	require.NoError(t, redis.NewScript(scripts.QuorumEnd.Source()).Run(ctx, rdb, q.endCall(m, "k", endAll, 0, true).Keys, q.endCall(m, "k", endAll, 0, true).Args...).Err())

	// Its end removes the mark; a dead contender's ends by itself.
	require.True(t, runAcquire(t, ctx, rdb, call("h", 3)).reply.won)
	require.False(t, runAcquire(t, ctx, rdb, markCall(call("k", 3), time.Minute)).reply.won)
	end := q.endCall(m, "k", 3, 0, true)
	require.NoError(t, redis.NewScript(scripts.QuorumEnd.Source()).Run(ctx, rdb, end.Keys, end.Args...).Err())
	assert.False(t, raw.HExists(ctx, m.k.waiters, "rlock:mark").Val(), "the marked field's end removes the mark")
	require.False(t, runAcquire(t, ctx, rdb, markCall(call("d", 1), 20*time.Millisecond)).reply.won)
	assert.Equal(t, "d", runAcquire(t, ctx, rdb, call("r", 3)).reply.holder)
	deadline := time.Now().Add(30 * time.Second)
	for raw.Exists(ctx, m.k.waiters).Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // poll interval
	}
	assert.Equal(t, "h", runAcquire(t, ctx, rdb, call("r", 4)).reply.holder, "a dead contender's mark ends with its time")
}

// End to end: an attempt that ranks first of a split (it holds the first
// master in run-ID order; fresh contenders hold the others) marks the
// masters it asks again, so that a rival's first attempt, which knows no
// ranking, is refused there even once the contender there undid its win,
// and the first-ranked completes. Without the mark the rival's request
// would be told the real holder, then take the freed master. The keeping
// grace is 200ms: on a machine too loaded to see the mark within it, the
// attempt gives up, so the case has five tries and must complete once.
func TestQuorumMarkKeepsTheMasterForTheFirstRanked(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	f := newSplitFixture(t, "q-mark-warm")
	srvs, rdbs, order, c, other, oq := f.srvs, f.rdbs, f.order, f.c, f.other, f.oq

	var completed bool
	for try := 0; try < 5 && !completed; try++ {
		name := fmt.Sprintf("q-mark-%d", try)
		om := other.Mutex(name)
		rival := func(field string, n int64) scripts.Call {
			return oq.acquireCall(om, attempt{field: other.id + ":" + field, ttl: time.Minute}, n)
		}
		runAcquire(t, ctx, rdbs[order[1]], rival("x", 1))
		runAcquire(t, ctx, rdbs[order[2]], rival("y", 1))
		done := make(chan error, 1)
		m := c.Mutex(name)
		go func() {
			h, err := m.TryLock(ctx, 0, 0)
			if err == nil {
				err = m.Unlock(h)
			}
			done <- err
		}()
		marked := srvs[order[1]].Client()
		err := waitOr(t, done, func() bool { return marked.HExists(ctx, om.k.waiters, "rlock:mark").Val() })
		if errors.Is(err, errPending) {
			r := runAcquire(t, ctx, rdbs[order[1]], rival("r", 1))
			assert.False(t, r.reply.won)
			assert.True(t, strings.HasPrefix(r.reply.holder, c.id+":"), "the rival is refused for the first-ranked, not told x (%q)", r.reply.holder)
			require.NoError(t, rdbs[order[1]].Del(ctx, name).Err()) // x undoes its win
			r = runAcquire(t, ctx, rdbs[order[1]], rival("r", 2))
			if r.reply.won {
				// The first-ranked's TryLock (no wait) ended before this
				// attempt ran, and its end took the mark: on a loaded
				// machine the test's own calls may be that slow. Either it
				// won the freed master and released it already (it
				// completed), or it gave up: that try shows nothing, and a
				// mark never honoured fails every try.
				err = testsupport.Recv(t, done, 30*time.Second, "TryLock")
				if err == nil {
					t.Logf("try %d: the first-ranked completed and released before the rival's second attempt", try)
					completed = true
					continue
				}
				require.ErrorIs(t, err, ErrNotAcquired)
				t.Logf("try %d: the first-ranked gave up before the rival's second attempt", try)
				continue
			}
			err = testsupport.Recv(t, done, 30*time.Second, "TryLock")
		}
		completed = err == nil
		if !completed {
			t.Logf("try %d: %v", try, err)
			require.ErrorIs(t, err, ErrNotAcquired)
		}
	}
	assert.True(t, completed, "the first-ranked attempt completed its split")
}
