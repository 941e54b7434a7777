package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimCounter is a queuer that counts the claims it is asked for.
type claimCounter struct{ claims int }

func (q *claimCounter) retry(context.Context, attempt) (acquireReply, error) {
	return acquireReply{}, nil
}

func (q *claimCounter) claim(context.Context, attempt) (int64, bool) {
	q.claims++
	return 0, false
}

func (q *claimCounter) leave(context.Context, attempt) (int64, bool, error) { return 0, false, nil }

func (q *claimCounter) abandon(string) {}

// A hand-off received before the waiter's last busy attempt was sent is
// stale: that attempt ran after it and did not find the waiter's field, so
// the lock handed over had expired unclaimed, and someone else may hold it
// now. Before the fix, such a message (kept in the waiter's channel while a
// slow attempt ran: a lost reply, a stalled machine) was taken for a fresh
// one, with a claim window counted from that attempt, and Lock returned a
// hold of a lock another client held (the crash soak with lost replies:
// overlapping holds, fencing tokens out of order). It is dropped now,
// without a claim; a hand-off received after the attempt was sent is still
// taken at once.
func TestStaleHandoffIsDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := &claimCounter{}
	lastBusy := time.Now()
	wt := &waitTurn{c: &Client{}, q: q, a: attempt{field: "c:1", ttl: time.Second}, lastBusy: lastBusy}

	_, done, err := wt.claim(ctx, handoff{token: 5, at: lastBusy.Add(-time.Millisecond)})
	require.NoError(t, err)
	assert.False(t, done, "a stale hand-off is no turn")
	assert.Zero(t, q.claims, "nor is it claimed")

	tr, done, err := wt.claim(ctx, handoff{token: 7, at: lastBusy.Add(time.Millisecond)})
	require.NoError(t, err)
	require.True(t, done, "a hand-off after the last busy attempt is the turn")
	assert.Equal(t, int64(7), tr.token)
	assert.False(t, tr.claimBy.IsZero(), "claimed in the background, within its window")
	assert.Zero(t, q.claims)
}

// The hub stamps each hand-off with the time it received it.
func TestDispatchStampsHandoffs(t *testing.T) {
	t.Parallel()
	c := &Client{id: "c"}
	h := newHub(c, nil)
	w := newWaiter("c:1")
	ns := &nameSub{handoff: "rlock_handoff:{n}:c", byField: map[string]*waiter{w.field: w}}
	h.byChannel[ns.handoff] = ns
	before := time.Now()
	h.dispatch(ns.handoff, "c:1|9|prev|meta")
	ho := <-w.handed
	assert.Equal(t, int64(9), ho.token)
	assert.False(t, ho.at.Before(before), "stamped on receipt")
}

// A hand-off the server made before our last busy attempt ran is stale
// however late this client receives it: a paused process, or a hub slower
// than the command connection, can deliver it after the next attempt was
// sent (the crash soak with faults found such an overlap). The server's
// times order the two.
func TestHandoffOlderThanTheBusyReplyIsDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := &claimCounter{}
	lastBusy := time.Now()
	later := lastBusy.Add(time.Millisecond) // received after the attempt was sent
	wt := &waitTurn{c: &Client{}, q: q, a: attempt{field: "c:1", ttl: time.Second}, lastBusy: lastBusy,
		answered: true, busy: acquireReply{pttl: time.Second, at: 1_000_500}}

	_, done, err := wt.claim(ctx, handoff{token: 5, sent: 1_000_200, at: later})
	require.NoError(t, err)
	assert.False(t, done, "handed over before the busy reply: stale, though received after the attempt")

	_, done, err = wt.claim(ctx, handoff{token: 6, sent: 1_000_500, at: later})
	require.NoError(t, err)
	assert.False(t, done, "at the busy reply's very µs: dropped (costs a wait, never a second holder)")

	tr, done, err := wt.claim(ctx, handoff{token: 7, sent: 1_000_501, at: later})
	require.NoError(t, err)
	require.True(t, done, "handed over after the busy reply: the turn")
	assert.Equal(t, int64(7), tr.token)
}

func TestParseHandoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		field   string
		want    handoff
	}{
		{"c:1|9|c:0|1732720000123|m|eta", "c:1", handoff{token: 9, holder: "c:0", sent: 1732720000123, meta: "m|eta"}},
		{"c:1|9|c:0|meta", "c:1", handoff{token: 9, holder: "c:0", meta: "meta"}},
		{"c:1|9|c:0|me|ta", "c:1", handoff{token: 9, holder: "c:0", meta: "me|ta"}},
		{"c:1|0||1732720000123|", "c:1", handoff{sent: 1732720000123}},
	} {
		field, ho, ok := parseHandoff(tc.payload)
		require.True(t, ok, tc.payload)
		assert.Equal(t, tc.field, field, tc.payload)
		assert.Equal(t, tc.want, ho, tc.payload)
	}
}

// The scripts tell the server's time in a busy reply and in the hand-off
// that follows it, the later one later: for a mutex and a semaphore.
func TestBusyRepliesAndHandoffsCarryTheServersTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := New(srv.NewClient())
	defer c.Close()

	handed := func(t *testing.T, name string, try func(attempt) (acquireReply, error), unlock func() error) {
		sub := srv.Client().Subscribe(ctx, "rlock_handoff:{"+name+"}:"+c.id)
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		a := attempt{field: c.id + ":waiter", ttl: time.Second, enqueue: true}
		a.fieldArg = a.field
		r, err := try(a)
		require.NoError(t, err)
		require.False(t, r.won)
		require.NotZero(t, r.at, "the busy reply tells the server's time")
		require.NoError(t, unlock())
		msg, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		field, ho, ok := parseHandoff(msg.Payload)
		require.True(t, ok)
		assert.Equal(t, a.field, field)
		assert.GreaterOrEqual(t, ho.sent, r.at, "handed over after the busy reply")
	}
	t.Run("a mutex", func(t *testing.T) {
		m := c.Mutex("server-times")
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		handed(t, "server-times", func(a attempt) (acquireReply, error) { return m.try(ctx, a) },
			func() error { return m.Unlock(h) })
	})
	t.Run("a semaphore", func(t *testing.T) {
		s := c.Semaphore("server-times-sem", 1)
		h, err := s.Lock(ctx)
		require.NoError(t, err)
		handed(t, "server-times-sem", func(a attempt) (acquireReply, error) { return s.try(ctx, a) },
			func() error { return s.Unlock(h) })
	})
}
