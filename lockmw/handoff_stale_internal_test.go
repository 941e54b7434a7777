package lockmw

import (
	"context"
	"testing"
	"time"

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
