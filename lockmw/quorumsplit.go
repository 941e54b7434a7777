package lockmw

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// Split votes: contenders that try a free name at once may each win some
// masters and none a majority. Redlock's remedy is that each undoes what it
// won and tries again after a random delay; but when a killed holder's key
// expires, every waiter of the name wakes at once, and on a loaded machine
// random delays part them only after several rounds, the name free all the
// while (issue 30: recoveries over the crash suite's bound, all from split
// votes).
//
// So a split is resolved in one round by a rule every contender computes
// from the answers it got, the same for all (standing):
//
//   - A holder that has a majority of the answers holds the lock: the others
//     undo what they won and wait, as for any busy lock, until a majority of
//     the masters is free (freeIn), woken by unlock messages.
//   - Otherwise the holders are ranked by the masters they hold, then by the
//     first of them in the masters' order by run ID (the same order in every
//     Client, however each lists its masters). A holding that ends within
//     the keeping grace (keepGrace) does not rank: it is the expiring key of
//     an earlier hold, not a contender, and its master is free soon.
//   - The contender that ranks first keeps what it won and asks the other
//     masters again (complete), as their holders undo their partial wins or
//     their keys expire, until it wins a majority, ranks first no more (a
//     holder took a majority, or ranks higher), or keepGrace has passed since
//     the attempt began; then it undoes what it won. The others undo at once
//     and back off a random delay (splitRetry), not woken early, which a
//     waiter doubles with each split in a row.
//
// Redlock's validity rule holds unchanged: every key the attempt won was set
// after the attempt began, and the attempt counts as won only if a majority
// won within the validity time counted from its beginning. Contenders whose
// views differ (one decided before a master answered) may both keep, or
// neither: then they meet on the remaining masters, where one wins, or part
// by the random delay, as before.

// keepGrace is how long an attempt that ranks first of a split may keep what
// it won while it asks the other masters again: a quarter of the TTL, at
// most 200ms. A contender's undo reaches a master within a round trip, and
// an expiring key's end within the TTLs' skew between masters; the validity
// left is at least three quarters of the TTL.
func keepGrace(ttl time.Duration) time.Duration { return min(ttl/4, 200*time.Millisecond) }

// splitRetry is how long an attempt that found the masters split, and did
// not rank first, waits before the next: random, up to twice the attempt's
// time (at least 2ms). A waiter doubles it with each split in a row, and is
// not woken early meanwhile (waitTurn.sleep).
func splitRetry(took time.Duration) time.Duration {
	return time.Millisecond + rand.N(max(2*took, 2*time.Millisecond))
}

// standing is where an attempt that did not win a majority stands.
type standing uint8

const (
	standHeld   standing = iota // another holder has a majority of the answers, or nobody ranks: busy
	standKeeper                 // the attempt ranks first of a split: it keeps what it won
	standLoser                  // another contender ranks first: a split
)

// standing ranks the holders the answers name (see above).
func (t *acquireTally) standing() standing {
	type rank struct {
		masters, lasting int
		first            int // the position of its first lasting master; len: none
	}
	ranks := make(map[string]*rank)
	order := t.q.runIDOrder()
	for pos, i := range order {
		holder, lasting := t.holdingOf(i)
		if holder == "" {
			continue
		}
		r := ranks[holder]
		if r == nil {
			r = &rank{first: len(order)}
			ranks[holder] = r
		}
		r.masters++
		if lasting {
			r.lasting++
			r.first = min(r.first, pos)
		}
	}
	var top string
	for h, r := range ranks {
		if h != t.field && r.masters >= t.q.need {
			return standHeld
		}
		if r.lasting == 0 {
			continue
		}
		if tr := ranks[top]; top == "" || r.lasting > tr.lasting || (r.lasting == tr.lasting && r.first < tr.first) {
			top = h
		}
	}
	switch top {
	case "":
		return standHeld
	case t.field:
		return standKeeper
	}
	return standLoser
}

// holdingOf returns the holder of master i in the answers ("" for none
// known) and whether its holding lasts beyond the keeping grace. The
// attempt's own wins last.
func (t *acquireTally) holdingOf(i int) (holder string, lasting bool) {
	switch t.votes[i] {
	case voteWon:
		return t.field, true
	case voteBusy:
		r := t.replies[i]
		return r.holder, r.pttl < 0 || r.pttl > t.grace
	}
	return "", false
}

// runIDOrder returns the masters' indexes ordered by their run IDs (those not
// known yet last, by index): an order every Client of the masters shares.
func (q *quorumStore) runIDOrder() []int {
	ids := make([]string, len(q.members))
	order := make([]int, len(q.members))
	for i, mb := range q.members {
		ids[i], order[i] = mb.restarts.id(), i
	}
	slices.SortFunc(order, func(a, b int) int {
		if (ids[a] == "") != (ids[b] == "") {
			if ids[a] == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(ids[a], ids[b]), cmp.Compare(a, b))
	})
	return order
}

// complete asks the masters held by others again, while the attempt ranks
// first of a split and keeps what it won: after about the first round's
// time (their holders' undo is on its way), or as an expiring key ends,
// doubling, until it wins a majority, ranks first no more, its context ends
// or the keeping grace from start has passed.
func (q *quorumStore) complete(ctx context.Context, t *acquireTally, call scripts.Call, start time.Time) {
	end := start.Add(t.grace)
	poll := max(time.Since(start), time.Millisecond)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for t.won() < q.need && t.standing() == standKeeper {
		d := min(poll, t.soonestEnd()+time.Millisecond)
		if time.Until(end) <= d {
			return
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		case <-q.c.closed:
			return
		}
		q.askAcquire(ctx, t, call, t.busyMembers(), end)
		poll *= 2
	}
}

// soonestEnd is the shortest TTL of the busy masters' holdings that end
// within the keeping grace; an hour when there is none.
func (t *acquireTally) soonestEnd() time.Duration {
	d := time.Hour
	for i, v := range t.votes {
		if p := t.replies[i].pttl; v == voteBusy && p >= 0 && p <= t.grace {
			d = min(d, p)
		}
	}
	return d
}

// busyMembers returns the masters whose answer was busy.
func (t *acquireTally) busyMembers() []*member {
	var out []*member
	for i, v := range t.votes {
		if v == voteBusy {
			out = append(out, t.q.members[i])
		}
	}
	return out
}

// busyReply is the reply of an attempt that did not win: the holder that
// holds the most of the busy masters, busy until a majority of the masters
// is free (freeIn); or, when the attempt found the masters split and did not
// win the split, a random back-off (splitRetry) marked split. false when no
// master answered busy.
func (t *acquireTally) busyReply(took time.Duration) (acquireReply, bool) {
	held := make(map[string]int)
	var r acquireReply
	found := false
	for i, v := range t.votes {
		if v != voteBusy {
			continue
		}
		rep := t.replies[i]
		held[rep.holder]++
		if !found || held[rep.holder] > held[r.holder] {
			r, found = rep, true
		}
	}
	if !found {
		return acquireReply{}, false
	}
	if t.standing() == standHeld {
		r.pttl = t.freeIn()
		return r, true
	}
	r.pttl, r.split = splitRetry(took), true
	return r, true
}

// freeIn is how long until a majority of the masters is free, from the
// answers: the need-th shortest of the busy masters' TTLs, a master won
// (undone now) free at once; -1 when that holding has no TTL.
func (t *acquireTally) freeIn() time.Duration {
	var ends []time.Duration
	for i, v := range t.votes {
		switch {
		case v == voteWon:
			ends = append(ends, 0)
		case v == voteBusy && t.replies[i].pttl < 0:
			ends = append(ends, time.Duration(1<<63-1))
		case v == voteBusy:
			ends = append(ends, t.replies[i].pttl)
		}
	}
	slices.Sort(ends)
	d := ends[min(t.q.need, len(ends))-1]
	if d == time.Duration(1<<63-1) {
		return -1
	}
	return d
}
