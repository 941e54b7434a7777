package lockmw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// acquireFirst is tryAcquire: a quorum never takes the fast path.
func (q *quorumStore) acquireFirst(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	return q.tryAcquire(ctx, m, a)
}

// tryAcquire runs one attempt of a: the acquire script on every master,
// never queued. It wins when a majority took the lock within the validity
// time, counting only masters not left out after a restart
// (quorumrestart.go), and decides as soon as the answers do: a majority won,
// too few still can, or a majority answered without a majority winning. A
// fenced win then takes its token (fence). A failed attempt is undone in the
// background where it may have taken the lock; a won one marks the masters
// that did not answer, whose late win the hold's end undoes (quorumend.go).
// An attempt that found the masters split between contenders reports them
// busy for a short random delay (splitRetry): a waiter tries again then.
func (q *quorumStore) tryAcquire(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	start := time.Now()
	try := int64(q.tries.Add(1))
	t := newAcquireTally(q)
	call := q.acquireCall(m, a, try)
	ask(ctx, q, func(ctx context.Context, mb *member) (quorumAcquired, error) {
		res, err := mb.run(ctx, scripts.QuorumAcquire, call.Keys, call.Args...).Slice()
		if err != nil {
			return quorumAcquired{}, err
		}
		return parseQuorumAcquire(res)
	}, t.add, func(a answer[quorumAcquired]) {
		if a.err == nil {
			q.members[a.i].counts(a.v.runID) // a restart seen late counts for the next attempt
		}
	})
	validity := a.ttl - time.Since(start) - a.ttl/100 - 2*time.Millisecond
	if t.won >= q.need && validity > 0 {
		q.markDirty(a.field, t.unsure())
		if !m.fenced {
			return acquireReply{won: true}, nil
		}
		token, err := q.fence(ctx, m, a.field, t.token)
		if err == nil {
			return acquireReply{won: true, token: token}, nil
		}
		q.undoAttempt(m, a, try, t)
		return acquireReply{}, err
	}
	q.undoAttempt(m, a, try, t)
	if t.won >= q.need { // a majority won, after the validity time
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %w (%v of a TTL of %v)", m.name, errTooSlow, time.Since(start).Round(time.Millisecond), a.ttl))
	}
	if t.answered < q.need || t.busy == nil {
		errs := t.errs
		if n := t.pending(); n > 0 {
			errs = append(errs, fmt.Errorf("%w (%d)", errNotAnswered, n))
		}
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %d of %d masters answered, %d needed: %w", m.name, t.answered, len(q.members), q.need, errors.Join(errs...)))
	}
	busy := *t.busy
	if t.split() {
		// Contenders split the masters between them, and each undoes
		// what it took: the TTL of a partial win says nothing. Try again
		// after a random delay, as Redlock does, so that they part.
		busy.pttl, busy.split = splitRetry(time.Since(start)), true
	}
	return busy, nil
}

// splitRetry is how long an attempt that found the masters split waits
// before the next: random, up to twice the attempt's time (at least 2ms).
// A waiter doubles it with each split in a row, and is not woken early
// meanwhile (waitTurn.sleep).
func splitRetry(took time.Duration) time.Duration {
	return time.Millisecond + rand.N(max(2*took, 2*time.Millisecond))
}

// Why an attempt failed without a busy master; each passes (a wait tries
// again).
var (
	errRestarted   = errors.New("lockmw: a master restarted lately and is left out of acquisitions for a watchdog timeout")
	errNotAnswered = errors.New("lockmw: masters had not answered when the others decided")
	errTooSlow     = errors.New("lockmw: a majority won, but after the validity time")
)

// acquireCall is quorumacquire.lua for attempt try of a, never queued.
func (q *quorumStore) acquireCall(m *Mutex, a attempt, try int64) scripts.Call {
	c := q.c
	return scripts.Call{
		Keys: append(m.akeys[:len(m.akeys):len(m.akeys)], m.k.latchBase+q.endReqID(a.field)),
		Args: []any{c.ttlArg(a.ttl), a.field, argFalse, c.graceArg, flag(m.fenced), argFalse, c.claimArg(a.ttl), c.tokenTTLArg, try},
	}
}

// quorumAcquired is one master's answer to an acquisition attempt.
type quorumAcquired struct {
	runID string
	reply acquireReply
}

// parseQuorumAcquire reads quorumacquire.lua's reply: {run_id, acquire.lua's}.
func parseQuorumAcquire(res []any) (quorumAcquired, error) {
	if len(res) != 2 {
		return quorumAcquired{}, fmt.Errorf("unexpected reply %v", res)
	}
	inner, _ := res[1].([]any)
	r, err := parseAcquire(inner)
	id, _ := res[0].(string)
	return quorumAcquired{runID: id, reply: r}, err
}

// acquireTally counts the answers to one attempt as they arrive.
type acquireTally struct {
	q        *quorumStore
	won      int // wins that count
	answered int // masters whose answer counts: a counted win or busy
	seen     []bool
	took     []bool // the master took the lock for this attempt, counted or not
	failed   []bool // the master answered with an error: the request may still run
	token    int64  // the largest token of the counted wins
	busy     *acquireReply
	holders  int // busy holders told apart: 2 means two or more
	errs     []error
}

func newAcquireTally(q *quorumStore) *acquireTally {
	n := len(q.members)
	return &acquireTally{q: q, seen: make([]bool, n), took: make([]bool, n), failed: make([]bool, n)}
}

// add counts one answer and reports whether the attempt is decided.
func (t *acquireTally) add(a answer[quorumAcquired], pending int) bool {
	t.seen[a.i] = true
	switch r := a.v.reply; {
	case a.err != nil:
		t.failed[a.i] = true
		t.errs = append(t.errs, a.err)
	case !t.q.members[a.i].counts(a.v.runID):
		t.took[a.i] = r.won // left out after a restart: neither yes nor no
		t.errs = append(t.errs, errRestarted)
	case r.won:
		t.took[a.i] = true
		t.won++
		t.answered++
		t.token = max(t.token, r.token)
	default:
		t.answered++
		if t.busy == nil {
			t.holders = 1
		} else if r.holder != t.busy.holder {
			t.holders = 2
		}
		if t.busy == nil || (r.pttl >= 0 && r.pttl < t.busy.pttl) {
			t.busy = &r
		}
	}
	need := t.q.need
	return t.won >= need || t.won+pending < need || t.answered >= need
}

// split reports whether no contender holds a majority: this attempt took
// a master, or the busy ones name different holders.
func (t *acquireTally) split() bool {
	return t.holders > 1 || slices.Contains(t.took, true)
}

// pending counts the masters that had not answered at the decision.
func (t *acquireTally) pending() int {
	n := 0
	for _, seen := range t.seen {
		if !seen {
			n++
		}
	}
	return n
}

// unsure returns the masters whose acquire request may still run: not
// answered yet, or failed.
func (t *acquireTally) unsure() []bool {
	out := make([]bool, len(t.seen))
	for i := range out {
		out[i] = !t.seen[i] || t.failed[i]
	}
	return out
}

// undoAttempt undoes attempt try of a in the background wherever it took or
// may still take the lock: the lock is freed there if the attempt holds it,
// and where the request may still run, the field's end latch refuses it.
func (q *quorumStore) undoAttempt(m *Mutex, a attempt, try int64, t *acquireTally) {
	latch := q.latchFor(a.ttl)
	until := time.Now().Add(latch)
	for i, unsure := range t.unsure() {
		if !unsure && !t.took[i] {
			continue
		}
		var guard time.Duration
		if unsure {
			guard = latch
		}
		q.members[i].later(redo{s: scripts.QuorumEnd, call: q.endCall(m, a.field, try, guard, true), until: until})
	}
}

// maxFenceRounds bounds the rounds of fence; each round past the first
// follows another acquisition's fence that moved a counter meanwhile.
const maxFenceRounds = 8

// fence gives a hold its fencing token, after it won a majority: seen is the
// largest token its acquire replies had. A round runs fence.lua on every
// master: each whose counter is at most seen sets it to seen+1, the token;
// the round succeeds when a majority did. A master whose counter is above
// seen (another hold's fence came first there) makes the next round start
// from its counter.
//
// Why the token is above every earlier hold's: an earlier hold wrote its
// token T to a majority before its Lock returned, and this one won only
// after that hold ended; the two majorities share a master, where this
// round ran after that write and found a counter at least T, at most seen:
// the token seen+1 is above T. (The acquire script's own increment, in the
// first round trip, may have run before that write, on a master slow to
// answer: it proves nothing alone.)
func (q *quorumStore) fence(ctx context.Context, m *Mutex, field string, seen int64) (int64, error) {
	for range maxFenceRounds {
		var acks, above int
		var top int64
		var errs []error
		round := seen // a straggler of this round sends this round's
		ask(ctx, q, func(ctx context.Context, mb *member) (int64, error) {
			return mb.run(ctx, scripts.Fence, m.akeys, round, field, q.c.tokenTTLArg).Int64()
		}, func(a answer[int64], pending int) bool {
			switch {
			case a.err != nil:
				errs = append(errs, a.err)
			case a.v > seen:
				above++
				top = max(top, a.v)
			default:
				acks++
			}
			return acks >= q.need || acks+pending < q.need
		}, nil)
		if acks >= q.need {
			return seen + 1, nil
		}
		if above == 0 {
			return 0, fmt.Errorf("lockmw: acquire %q: fencing token reached %d of %d masters: %w", m.name, acks, len(q.members), errors.Join(errs...))
		}
		seen = top
	}
	return 0, fmt.Errorf("lockmw: acquire %q: fencing counters moved on for %d rounds", m.name, maxFenceRounds)
}
