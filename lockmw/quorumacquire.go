package lockmw

import (
	"context"
	"errors"
	"fmt"
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
// too few still can, or a majority answered without a majority winning. An
// attempt that found the masters split between contenders and ranks first
// among them keeps what it won and asks the others again for a short while
// (quorumsplit.go). A fenced win then takes its token (fence). A failed
// attempt is undone in the background where it may have taken the lock; a
// won one marks the masters that did not answer, whose late win the hold's
// end undoes (quorumend.go).
func (q *quorumStore) tryAcquire(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	start := time.Now()
	try := int64(q.tries.Add(1))
	t := newAcquireTally(q, a)
	call := q.acquireCall(m, a, try)
	q.askAcquire(ctx, t, call, q.members, time.Time{})
	if t.won() < q.need && t.answered() >= q.need {
		q.settle(ctx, t, call, start)
	}
	validity := a.ttl - time.Since(start) - a.ttl/100 - 2*time.Millisecond
	if t.won() >= q.need && validity > 0 {
		q.markDirty(a.field, t.unsure())
		if !m.fenced {
			return acquireReply{won: true}, nil
		}
		// The fencing round counts in the validity time too: nothing renews
		// the keys until Lock returns, so a round that waited for a master
		// that does not answer (another answered a counter above, so every
		// other must ack) past it would return a hold whose keys expired.
		deadline := start.Add(a.ttl - a.ttl/100 - 2*time.Millisecond)
		token, err := q.fence(ctx, m, a.field, t.token, deadline)
		if err == nil && time.Now().Before(deadline) {
			return acquireReply{won: true, token: token}, nil
		}
		if err == nil {
			err = errors.Join(ErrNotAcquired,
				fmt.Errorf("lockmw: acquire %q: %w (its fencing round ended %v into a TTL of %v)", m.name, errTooSlow, time.Since(start).Round(time.Millisecond), a.ttl))
		}
		q.undoAttempt(m, a, try, t, false)
		return acquireReply{}, err
	}
	busy, ok := t.busyReply(time.Since(start))
	q.undoAttempt(m, a, try, t, t.standing() == standLoser)
	if t.won() >= q.need { // a majority won, after the validity time
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %w (%v of a TTL of %v)", m.name, errTooSlow, time.Since(start).Round(time.Millisecond), a.ttl))
	}
	if t.answered() < q.need || !ok {
		errs := t.errs
		if n := t.pending(); n > 0 {
			errs = append(errs, fmt.Errorf("%w (%d)", errNotAnswered, n))
		}
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %d of %d masters answered, %d needed: %w", m.name, t.answered(), len(q.members), q.need, errors.Join(errs...)))
	}
	return busy, nil
}

// askAcquire runs the attempt's call on the masters mbs and counts their
// answers in t until they decide: once a majority won or too few still can;
// in the first round (until zero: every master) also as soon as a majority
// answered, won or not; in a round of settle, at until. The answers that
// come later go to t.late.
func (q *quorumStore) askAcquire(ctx context.Context, t *acquireTally, call scripts.Call, mbs []*member, until time.Time) {
	first := until.IsZero()
	for _, mb := range mbs {
		t.votes[mb.i] = votePending
	}
	askSome(ctx, q, mbs, until, func(ctx context.Context, mb *member) (quorumAcquired, error) {
		res, err := mb.run(ctx, scripts.QuorumAcquire, call.Keys, call.Args...).Slice()
		if err != nil {
			return quorumAcquired{}, err
		}
		return parseQuorumAcquire(res)
	}, func(a answer[quorumAcquired], pending int) bool {
		t.add(a)
		won := t.won()
		return won >= q.need || won+pending < q.need || (first && t.answered() >= q.need)
	}, func(a answer[quorumAcquired]) {
		if a.err == nil {
			q.members[a.i].counts(a.v.runID) // a restart seen late counts for the next attempt
		}
		select {
		case t.late <- a: // settle counts it, while it runs
		default:
		}
	})
}

// Why an attempt failed without a busy master; each passes (a wait tries
// again).
var (
	errRestarted   = errors.New("lockmw: a master restarted lately and is left out of acquisitions for a watchdog timeout")
	errNotAnswered = errors.New("lockmw: masters had not answered when the others decided")
	errTooSlow     = errors.New("lockmw: a majority won, but after the validity time")
)

// acquireCall is quorumacquire.lua for attempt try of a, never queued,
// leaving no mark (markCall).
func (q *quorumStore) acquireCall(m *Mutex, a attempt, try int64) scripts.Call {
	c := q.c
	return scripts.Call{
		Keys: append(append(m.akeys[:len(m.akeys):len(m.akeys)], m.k.latchBase+q.endReqID(a.field)), m.gate...),
		Args: []any{c.ttlArg(a.ttl), a.field, argFalse, c.graceArg, flag(m.fenced), argFalse, c.claimArg(a.ttl), c.tokenTTLArg, try, 0},
	}
}

// markCall is the acquire call that leaves a mark for d where it finds the
// lock busy (quorumacquire.lua; quorumsplit.go's settle): at least 1ms.
func markCall(call scripts.Call, d time.Duration) scripts.Call {
	args := slices.Clone(call.Args)
	args[len(args)-1] = max(d.Milliseconds(), 1)
	return scripts.Call{Keys: call.Keys, Args: args}
}

// quorumAcquired is one master's answer to an acquisition attempt.
type quorumAcquired struct {
	runID string
	reply acquireReply
	age   time.Duration // busy: how long ago the holder won there; -1: not known
	mark  bool          // busy: refused by the holder's mark, which it does not hold (quorumsplit.go)
}

// parseQuorumAcquire reads quorumacquire.lua's reply: {run_id, acquire.lua's
// reply[, the holder's age in ms[, 1: a mark refused it]]}.
func parseQuorumAcquire(res []any) (quorumAcquired, error) {
	if len(res) < 2 || len(res) > 4 {
		return quorumAcquired{}, fmt.Errorf("unexpected reply %v", res)
	}
	inner, _ := res[1].([]any)
	r, err := parseAcquire(inner)
	id, _ := res[0].(string)
	age := time.Duration(-1)
	if len(res) >= 3 {
		if ms := asInt(res[2]); ms >= 0 {
			age = time.Duration(ms) * time.Millisecond
		}
	}
	return quorumAcquired{runID: id, reply: r, age: age, mark: len(res) == 4 && asInt(res[3]) == 1}, err
}

// acquireVote is one master's answer to an attempt, as counted.
type acquireVote uint8

const (
	votePending acquireVote = iota // asked, not answered yet
	voteWon                        // took the lock for this attempt: a win that counts
	voteBusy                       // another holds the lock there
	voteFailed                     // an error: the request may still run
	voteLeftOut                    // restarted lately: neither yes nor no
)

// acquireTally counts the answers to one attempt as they arrive, over its
// rounds (a master asked again has its new answer).
type acquireTally struct {
	q       *quorumStore
	field   string
	grace   time.Duration   // how long the attempt may keep what it won (keepGrace)
	votes   []acquireVote   // per master
	took    []bool          // the master took the lock for this attempt, counted or not
	marked  []bool          // the attempt asked the master to mark it (settle)
	replies []acquireReply  // the busy masters' replies
	ages    []time.Duration // and how long ago their holders won there (-1: not known)
	refused []bool          // and whether the holder's mark refused it (quorumsplit.go)
	token   int64           // the largest token of the counted wins
	errs    []error
	late    chan answer[quorumAcquired] // the answers that came after a round's decision
}

func newAcquireTally(q *quorumStore, a attempt) *acquireTally {
	n := len(q.members)
	return &acquireTally{q: q, field: a.field, grace: keepGrace(a.ttl),
		votes: make([]acquireVote, n), took: make([]bool, n), marked: make([]bool, n),
		replies: make([]acquireReply, n), ages: make([]time.Duration, n), refused: make([]bool, n),
		late: make(chan answer[quorumAcquired], 4*n)}
}

// add counts one answer.
func (t *acquireTally) add(a answer[quorumAcquired]) {
	switch r := a.v.reply; {
	case a.err != nil:
		t.votes[a.i] = voteFailed
		t.errs = append(t.errs, a.err)
	case !t.q.members[a.i].counts(a.v.runID):
		t.votes[a.i] = voteLeftOut
		t.took[a.i] = t.took[a.i] || r.won
		t.errs = append(t.errs, errRestarted)
	case r.won:
		t.votes[a.i] = voteWon
		t.took[a.i] = true
		t.token = max(t.token, r.token)
	default:
		t.votes[a.i] = voteBusy
		t.replies[a.i], t.ages[a.i], t.refused[a.i] = r, a.v.age, a.v.mark
	}
}

// addLate counts an answer that came after its round's decision, unless
// the master has answered since.
func (t *acquireTally) addLate(a answer[quorumAcquired]) {
	if t.votes[a.i] == votePending {
		t.add(a)
	}
}

// count counts the masters whose vote is one of vs.
func (t *acquireTally) count(vs ...acquireVote) int {
	n := 0
	for _, v := range t.votes {
		if slices.Contains(vs, v) {
			n++
		}
	}
	return n
}

// won counts the wins that count.
func (t *acquireTally) won() int { return t.count(voteWon) }

// answered counts the masters whose answer counts: a counted win or busy.
func (t *acquireTally) answered() int { return t.count(voteWon, voteBusy) }

// pending counts the masters that have not answered.
func (t *acquireTally) pending() int { return t.count(votePending) }

// unsure returns the masters whose acquire request may still run: not
// answered yet, or failed.
func (t *acquireTally) unsure() []bool {
	out := make([]bool, len(t.votes))
	for i, v := range t.votes {
		out[i] = v == votePending || v == voteFailed
	}
	return out
}

// undoAttempt undoes attempt try of a in the background wherever it took or
// may still take the lock: the lock is freed there if the attempt holds it,
// and where the request may still run, the field's end latch refuses it.
// Where it left a mark (settle), the mark ends.
// quiet frees it without the unlock message: the attempt lost a split vote,
// and its rivals must not be woken while the first-ranked completes.
func (q *quorumStore) undoAttempt(m *Mutex, a attempt, try int64, t *acquireTally, quiet bool) {
	latch := q.latchFor(a.ttl)
	until := time.Now().Add(latch)
	for i, unsure := range t.unsure() {
		if !unsure && !t.took[i] && !t.marked[i] {
			continue
		}
		var guard time.Duration
		if unsure {
			guard = latch
		}
		call := q.endCall(m, a.field, try, guard, true)
		if quiet {
			call.Args = append(call.Args, argTrue)
		}
		q.members[i].later(redo{s: scripts.QuorumEnd, call: call, until: until})
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
//
// The rounds end at until, the acquisition's validity time: a master that
// has not answered by then is a straggler, and a round short of a majority
// then fails the fence.
func (q *quorumStore) fence(ctx context.Context, m *Mutex, field string, seen int64, until time.Time) (int64, error) {
	for range maxFenceRounds {
		var acks, above int
		var top int64
		var errs []error
		round := seen // a straggler of this round sends this round's
		askSome(ctx, q, q.members, until, func(ctx context.Context, mb *member) (int64, error) {
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
		if above == 0 || !time.Now().Before(until) {
			if n := len(q.members) - acks - above - len(errs); n > 0 {
				errs = append(errs, fmt.Errorf("%w (%d)", errNotAnswered, n))
			}
			return 0, errors.Join(ErrNotAcquired,
				fmt.Errorf("lockmw: acquire %q: fencing token reached %d of %d masters within the validity time: %w", m.name, acks, len(q.members), errors.Join(errs...)))
		}
		seen = top
	}
	return 0, fmt.Errorf("lockmw: acquire %q: fencing counters moved on for %d rounds", m.name, maxFenceRounds)
}
