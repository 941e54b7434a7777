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
//   - Otherwise the contenders are ranked by the masters they won, then by
//     the first of them in the masters' order by run ID (the same order in
//     every Client, however each lists its masters). A contender is a holder
//     that won its masters within the keeping grace (keepGrace; the master
//     tells how long ago, quorumacquire.lua): an older holding is an earlier
//     hold's expiring key, or the partial win of a process that died in its
//     attempt, and must not be waited for.
//   - The contender that ranks first keeps what it won and asks the other
//     masters again (settle), as their holders undo their partial wins or
//     their keys expire, until it wins a majority, ranks first no more (a
//     holder took a majority, or ranks higher), or keepGrace has passed since
//     the attempt began; then it undoes what it won, and backs off a random
//     delay (splitRetry), not woken by its own undo, which a waiter doubles
//     with each split in a row, up to four times.
//   - The others undo at once, without an unlock message (quorumend.lua's
//     quiet DEL: their undo must wake no rival while the first completes),
//     and wait for what is left of the first's grace, woken by the unlock
//     message of its release or of its giving up.
//   - The first-ranked's asks leave a mark, for what is left of its grace,
//     on each master they find busy, and the master refuses every other
//     field while the mark lives (quorumacquire.lua): a freed master is
//     then kept for it, not taken by the first attempt of another Lock call,
//     which knows no ranking and would hold it for the few ms its attempt
//     and undo take, again and again, until the first's grace ends (issue
//     30, the faulted soak's last slow recovery). The refused attempt is
//     told the marked contender holds the master, freshly, for what is left
//     of the mark; the mark ranks its contender but is no holding (a holder
//     with a majority must have won it), so the refused attempt is a loser
//     of the split and waits for the first-ranked as above. The mark ends
//     with the first's win there, its undo or the end of its hold
//     (quorumend.lua), and by itself with its grace if it died: a mark only
//     refuses, and safety is the acquire script's.
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

// splitRetry is how long an attempt that ranked first of a split and gave
// up waits before the next: three times the attempt's time (a rival whose
// view differed may be completing: its undo and one more round trip) and a
// random part up to twice as long, at least 2ms. A waiter doubles it with
// each split in a row, up to four times, and is not woken early meanwhile
// (waitTurn.sleep): its own undo publishes the unlock message.
func splitRetry(took time.Duration) time.Duration {
	return 3*took + time.Millisecond + rand.N(max(2*took, 2*time.Millisecond))
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
	st, _ := t.rank()
	return st
}

// rank returns the attempt's standing and the contender that ranks first
// ("" for none).
func (t *acquireTally) rank() (standing, string) {
	type rank struct {
		masters, fresh int
		first          int // the position of its first fresh master; len: none
	}
	ranks := make(map[string]*rank)
	order := t.q.runIDOrder()
	for pos, i := range order {
		holder, fresh := t.holdingOf(i)
		if holder == "" {
			continue
		}
		r := ranks[holder]
		if r == nil {
			r = &rank{first: len(order)}
			ranks[holder] = r
		}
		if t.votes[i] != voteBusy || !t.refused[i] {
			r.masters++
		}
		if fresh {
			r.fresh++
			r.first = min(r.first, pos)
		}
	}
	var top string
	for h, r := range ranks {
		if h != t.field && r.masters >= t.q.need {
			return standHeld, h
		}
		if r.fresh == 0 {
			continue
		}
		if tr := ranks[top]; top == "" || r.fresh > tr.fresh || (r.fresh == tr.fresh && r.first < tr.first) {
			top = h
		}
	}
	switch {
	case top == "" || (top == t.field && t.feasible() < t.q.need):
		return standHeld, ""
	case top == t.field:
		return standKeeper, top
	}
	return standLoser, top
}

// feasible counts the masters the attempt may still win within the keeping
// grace: won, not answered, held by a contender (who yields) or by a key
// that ends within the grace.
func (t *acquireTally) feasible() int {
	n := 0
	for i, v := range t.votes {
		_, fresh := t.holdingOf(i)
		p := t.replies[i].pttl
		if v == voteWon || v == votePending || (v == voteBusy && (fresh || (p >= 0 && p <= t.grace))) {
			n++
		}
	}
	return n
}

// holdingOf returns the holder of master i in the answers ("" for none
// known) and whether it is a contender's fresh win (see above). The
// attempt's own wins are.
func (t *acquireTally) holdingOf(i int) (holder string, fresh bool) {
	switch t.votes[i] {
	case voteWon:
		return t.field, true
	case voteBusy:
		return t.replies[i].holder, t.ages[i] >= 0 && t.ages[i] <= t.grace
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

// settle goes on with an attempt whose first round was decided when a
// majority had answered, without a majority won. While the answers still
// pending could make one, or the masters are split (every contender then
// ranks from all the answers), it waits for them a while: twice the round's time
// (a master that answers is that close behind the others; one that does not
// costs no more). Then, while the attempt ranks first of a split and keeps
// what it won, it asks the masters held by others again: every first
// round's time (their holders' undo is on its way), or as an expiring key
// ends, at a steady pace, until it wins a majority, ranks first no more, its
// context ends or the keeping grace from start has passed. Late answers
// count as they come. The pace does not slow: a master freed by a rival's
// undo is free only until the next Lock call of another goroutine takes it
// (a first attempt knows no ranking; it then undoes and waits), so the first
// asks again within a round of each undo rather than at doubling intervals,
// which let such calls take the master it waited for for a second (issue 30,
// the faulted soak's slow recovery); each ask marks the busy masters for
// it until the grace ends (see above). At most grace/poll asks, of the busy
// masters only.
func (q *quorumStore) settle(ctx context.Context, t *acquireTally, call scripts.Call, start time.Time) {
	end := start.Add(t.grace)
	took := time.Since(start)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	hope := time.Now().Add(min(max(2*took, 2*time.Millisecond), time.Until(end)))
	for t.won() < q.need && t.hopes() && time.Now().Before(hope) {
		if !t.awaitLate(ctx, timer, time.Until(hope)) {
			return
		}
	}
	poll := max(took, time.Millisecond)
	for t.won() < q.need && t.standing() == standKeeper {
		next := time.Now().Add(min(poll, t.soonestEnd()+time.Millisecond, t.grace/4))
		if !next.Before(end) {
			return
		}
		for time.Now().Before(next) {
			if !t.awaitLate(ctx, timer, time.Until(next)) {
				return
			}
		}
		if t.won() >= q.need || t.standing() != standKeeper {
			return
		}
		busy := t.busyMembers()
		for _, mb := range busy {
			t.marked[mb.i] = true
		}
		q.askAcquire(ctx, t, markCall(call, time.Until(end)), busy, end)
	}
}

// hopes reports whether the answers still pending may change the outcome:
// make a majority, or rank the attempt first of a split.
func (t *acquireTally) hopes() bool {
	p := t.pending()
	return p > 0 && (t.won()+p >= t.q.need || t.standing() != standHeld)
}

// awaitLate waits at most d for a late answer of the attempt and counts it;
// false when ctx ended or the Client closed.
func (t *acquireTally) awaitLate(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	timer.Reset(d)
	defer timer.Stop()
	select {
	case a := <-t.late:
		t.addLate(a)
	case <-timer.C:
	case <-ctx.Done():
		return false
	case <-t.q.c.closed:
		return false
	}
	return true
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

// busyReply is the reply of an attempt that did not win, false when no
// master answered busy. It names the holder that holds the most of the busy
// masters (the first-ranked contender, after a split), and the lock is busy
// until a majority of the masters is free (freeIn) when a holder has one;
// until the first-ranked contender has completed or given up (its keeping
// grace, and the attempt's time) when another ranks first: the waiter is
// woken by the unlock message of either end, and the undo of a contender
// that lost publishes none (undoAttempt). An attempt that ranked first and
// gave up reports a random back-off (splitRetry), marked split: its own undo
// must not wake it.
func (t *acquireTally) busyReply(took time.Duration) (acquireReply, bool) {
	st, top := t.rank()
	held := make(map[string]int)
	var r acquireReply
	found := false
	for i, v := range t.votes {
		if v != voteBusy {
			continue
		}
		rep := t.replies[i]
		held[rep.holder]++
		switch {
		case r.holder == top && found: // the first-ranked is named
		case !found, rep.holder == top, held[rep.holder] > held[r.holder]:
			r, found = rep, true
		}
	}
	switch {
	case !found:
		return acquireReply{}, false
	case st == standHeld:
		r.pttl = t.freeIn()
	case st == standLoser:
		r.pttl = t.graceLeft(top) + took + time.Millisecond + rand.N(took+time.Millisecond)
	default:
		r.pttl, r.split = splitRetry(took), true
	}
	return r, true
}

// graceLeft is how long the contender holder may still keep what it won:
// the keeping grace less the age of its oldest fresh win.
func (t *acquireTally) graceLeft(holder string) time.Duration {
	var oldest time.Duration
	for i := range t.votes {
		if h, fresh := t.holdingOf(i); fresh && h == holder && t.votes[i] == voteBusy {
			oldest = max(oldest, t.ages[i])
		}
	}
	return max(t.grace-oldest, 0)
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
