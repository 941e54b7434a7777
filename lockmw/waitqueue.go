package lockmw

// The wait queue and the hand-off: how a busy acquisition waits for its turn
// without polling, for every lock kind (its engine, engine.go, is the
// queuer). The protocol — the keys and
// their lifetimes, the messages, the claim window, the clean-up of abandoned
// attempts — is described once, in docs/waiting.md. Here is a waiter's side
// of it (waitTurn); the scripts are the lock kind's (for the mutex:
// acquire.lua queues, lib.lua's rlock_handoff hands over, claim.lua and
// leave.lua), the delivery of messages is the hub's (pubsub.go), and the
// background claim and clean-ups are the renewer's chores (chores.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// queuer is a lock kind that waits in the queue: what a waitTurn needs of it.
type queuer interface {
	// retry runs one more attempt of a, queued.
	retry(ctx context.Context, a attempt) (acquireReply, error)
	// claim gives a lock handed to a.field its full TTL: the token, false
	// when the claim window passed or Redis failed.
	claim(ctx context.Context, a attempt) (int64, bool)
	// leave takes a.field out of the queue, keeping a lock handed to it
	// meanwhile (with its full TTL): the token and true then.
	leave(ctx context.Context, a attempt) (int64, bool, error)
	// abandon undoes field's acquisition in the background.
	abandon(field string)
}

// claimWindow is how long a lock handed to a waiter of this TTL waits for its
// client to claim it (claim.lua gives it the full TTL): a tenth of the TTL,
// at least 200ms. A waiter that died just before its turn blocks the name
// that long instead of a whole TTL.
func claimWindow(ttl time.Duration) int64 {
	return min(msCeil(ttl), max(msCeil(ttl/10), 200))
}

// handoff is what the hand-off message tells the waiter it names.
type handoff struct {
	token        int64
	holder, meta string    // the previous holder's field and metadata
	sent         int64     // the server's time, in µs, when it handed over (0: not told)
	at           time.Time // when this client received it
}

// waiter is one waiting acquisition as the hub sees it: the channels its
// messages arrive on.
type waiter struct {
	field  string
	wake   chan struct{} // retry now
	handed chan handoff  // the lock was handed over
}

// newWaiter returns the waiter of field.
func newWaiter(field string) *waiter {
	return &waiter{field: field, wake: make(chan struct{}, 1), handed: make(chan handoff, 1)}
}

// parseHandoff splits "<field>|<token>|<previous holder>|<server µs>|<metadata>";
// the fields contain no '|' (client IDs may not), the metadata may. A message
// of an older rlock, without the server's time, reads too.
func parseHandoff(payload string) (string, handoff, bool) {
	parts := strings.SplitN(payload, "|", 5)
	if len(parts) < 2 {
		return "", handoff{}, false
	}
	var ho handoff
	ho.token, _ = strconv.ParseInt(parts[1], 10, 64)
	switch len(parts) {
	case 4:
		ho.holder, ho.meta = parts[2], parts[3]
	case 5:
		ho.holder = parts[2]
		if sent, err := strconv.ParseInt(parts[3], 10, 64); err == nil {
			ho.sent, ho.meta = sent, parts[4]
		} else { // an older message whose metadata holds a '|'
			ho.meta = parts[3] + "|" + parts[4]
		}
	}
	return parts[0], ho, true
}

// turn is how a wait won the lock.
type turn struct {
	token   int64
	base    time.Time // the earliest time the lock's TTL may have been set
	claimBy time.Time // non-zero: handed over, not claimed yet, lost after this
	lk      *lockBase // the lock won, when not the kind's own (acquireReply.lk)
}

// waitTurn is one acquisition's wait, queued in Redis, until the lock is
// handed to it or a retry wins it. Fill it in and call run once.
//
// A lock handed over arrives with only a claim window (claimWindow) of TTL.
// A watchdog hold with most of that window left is returned at once, with
// claimBy set to the window's end: the renewer claims it in the background
// and the hold is lost if that fails. Otherwise (a lease, or a window mostly
// gone) the claim is made before returning.
type waitTurn struct {
	c     *Client
	q     queuer
	name  string
	k     *keys
	a     attempt
	lease time.Duration
	ev    *AcquireEndEvent // filled with the holder met; nil without hooks

	busy     acquireReply // the last busy reply
	answered bool         // a busy reply arrived: busy holds the last one
	lastBusy time.Time    // when it was asked for: a hand-off cannot be earlier
	lastErr  error        // the last attempt's error, while Redis fails
	splits   int          // busy replies in a row that found a quorum split
	backoff  time.Duration

	w        *waiter
	joined   []joinedHub
	qj       *quorumJoin // a quorum waiter's hubs instead (quorumwait.go)
	deadline <-chan time.Time
	timer    *time.Timer
}

// joinedHub is a hub the waiter joined, to leave at the end.
type joinedHub struct {
	h  *hub
	ns *nameSub
}

// run waits at most wait from sent, the first attempt's time. A first
// attempt that failed (firstFailed let it wait) is lastErr, and busy is
// empty: the next attempt follows the subscription's confirmation, or the
// back-off (retrywait.go).
func (wt *waitTurn) run(ctx context.Context, wait time.Duration, sent time.Time) (turn, error) {
	if wt.lastErr != nil {
		wt.failed(wt.lastErr)
		if wait != Forever && time.Since(sent) >= wait { // the failed attempt outlasted the wait
			_, _, err := wt.giveUp(ctx, wt.busyErr(), false)
			return turn{}, err
		}
	}
	if wait != Forever {
		t := time.NewTimer(time.Until(sent.Add(wait)))
		defer t.Stop()
		wt.deadline = t.C
	}
	ready, confirmed, err := wt.joinHubsWithin(ctx, sent)
	if err != nil {
		wt.q.abandon(wt.a.field)
		return turn{}, withCtxErr(ctx, fmt.Errorf("lockmw: subscribe for %q: %w", wt.name, err))
	}
	defer wt.leaveHubs()
	wt.timer = time.NewTimer(time.Hour)
	defer wt.timer.Stop()
	// A new subscription: wait for the server to confirm it, then try once
	// more, for the lock may have been freed before it was in place.
	for _, rc := range ready {
		if t, done, err := wt.awaitReady(ctx, rc); done {
			return t, err
		}
	}
	for retryNow := !confirmed; ; retryNow = false {
		if !retryNow {
			wt.timer.Reset(wt.sleep())
			wake := wt.w.wake
			if wt.busy.split {
				// Contenders split a quorum's masters: the undo of their
				// partial wins wakes everyone at once, and waking would
				// make them collide again. The random back-off parts them.
				wake = nil
			}
			if t, done, err := wt.await(ctx, wake, wt.timer.C); done {
				return t, err
			}
			wt.timer.Stop()
		}
		if t, done, err := wt.retry(ctx); done {
			return t, err
		}
	}
}

// joinHubsWithin is joinHubs bounded by ctx (bounded.go): a new
// subscription's connection may wait for a paused server. A join that
// completes after the caller gave up is left at once.
func (wt *waitTurn) joinHubsWithin(ctx context.Context, sent time.Time) (ready []<-chan struct{}, confirmed bool, err error) {
	type joined struct {
		ready     []<-chan struct{}
		confirmed bool
	}
	r, err := bounded(wt.c, ctx, func(ctx context.Context) (joined, error) {
		ready, confirmed, err := wt.joinHubs(ctx, sent)
		return joined{ready, confirmed}, err
	}, func(joined, error) { wt.leaveHubs() })
	return r.ready, r.confirmed, err
}

// joinHubs registers the waiter with every hub (one per node). confirmed
// says every subscription was in place, unbroken, before the first attempt;
// ready are the channels of those not confirmed yet. On an error it leaves
// the hubs it joined.
func (wt *waitTurn) joinHubs(ctx context.Context, sent time.Time) (ready []<-chan struct{}, confirmed bool, err error) {
	if len(wt.c.hubs) > 1 {
		return wt.joinQuorum(ctx, sent)
	}
	wt.w = newWaiter(wt.a.field)
	confirmed = true
	for _, hb := range wt.c.hubs {
		ns, ok, rc, err := hb.join(ctx, wt.k, wt.w, sent)
		if err != nil {
			wt.leaveHubs()
			return nil, false, err
		}
		wt.joined = append(wt.joined, joinedHub{hb, ns})
		confirmed = confirmed && ok
		if rc != nil {
			ready = append(ready, rc)
		}
	}
	return ready, confirmed, nil
}

// refused is the server's refusal of a subscription the waiter joined, nil
// when none.
func (wt *waitTurn) refused() error {
	for _, j := range wt.joined {
		if err := j.h.refusedErr(j.ns); err != nil {
			return err
		}
	}
	return nil
}

// leaveHubs unregisters the waiter.
func (wt *waitTurn) leaveHubs() {
	if wt.qj != nil {
		wt.qj.leave(wt.w)
		return
	}
	for _, j := range wt.joined {
		j.h.leave(j.ns, wt.w)
	}
}

// sleep is how long to wait before the next attempt: until the holder's TTL
// runs out, at most a third of our TTL (which keeps our queue entry alive),
// or the back-off while Redis fails.
func (wt *waitTurn) sleep() time.Duration {
	d := wt.sleepCap()
	pttl := wt.busy.pttl
	if wt.busy.split { // the back-off doubles with each split in a row, up to 4x (quorumsplit.go)
		pttl <<= min(max(wt.splits-1, 0), 2)
	}
	if pttl >= 0 && pttl < d {
		d = pttl
	}
	if wt.backoff > 0 {
		d = min(retrySleep(wt.backoff), wt.sleepCap())
	}
	return d
}

// sleepCap is the longest sleep between attempts.
func (wt *waitTurn) sleepCap() time.Duration { return max(wt.a.ttl/3, time.Millisecond) }

// await waits for signal (a subscription confirmed, or a wake-up) or tick, a
// hand-off, or the end of the wait. done says the wait is over: with the
// lock when err is nil.
func (wt *waitTurn) await(ctx context.Context, signal <-chan struct{}, tick <-chan time.Time) (t turn, done bool, err error) {
	select {
	case ho := <-wt.w.handed:
		return wt.claim(ctx, ho)
	case <-signal:
	case <-tick:
	case <-ctx.Done():
		return wt.giveUp(ctx, errors.Join(wt.busyErr(), ctxErr(ctx)), false)
	case <-wt.c.closed:
		return wt.giveUp(ctx, fmt.Errorf("%w while waiting for %q", ErrClosed, wt.name), false)
	case <-wt.deadline:
		return wt.giveUp(ctx, wt.busyErr(), true)
	}
	return turn{}, false, nil
}

// awaitReady waits for a new subscription's confirmation, ready. While
// Redis fails (the last attempt did), it also retries on the back-off: the
// subscription may wait for a connection that commands do not need.
func (wt *waitTurn) awaitReady(ctx context.Context, ready <-chan struct{}) (t turn, done bool, err error) {
	for {
		var tick <-chan time.Time
		if wt.lastErr != nil {
			wt.timer.Reset(wt.sleep())
			tick = wt.timer.C
		}
		if t, done, err := wt.await(ctx, ready, tick); done {
			return t, done, err
		}
		wt.timer.Stop()
		select {
		case <-ready:
			if err := wt.refused(); err != nil {
				return wt.giveUp(ctx, fmt.Errorf("lockmw: subscribe for %q: %w", wt.name, err), false)
			}
			return turn{}, false, nil
		default: // the back-off passed
		}
		if t, done, err := wt.retry(ctx); done {
			return t, done, err
		}
	}
}

// claim takes over a lock handed to us; not done when the claim window
// passed (we go on waiting) or Redis failed (the next attempt claims it).
//
// A hand-off made before our last busy attempt ran is stale: that attempt
// did not find our field, so the lock handed over had expired unclaimed. It
// is dropped, or its claim window, counted from that attempt, would make a
// lock someone else holds look like ours. The server's times order the two
// (stale: handed before the busy reply's time, in µs), however late the
// message arrives; a message received before the attempt was sent is stale
// too.
func (wt *waitTurn) claim(ctx context.Context, ho handoff) (t turn, done bool, err error) {
	if wt.stale(ho) {
		return turn{}, false, nil
	}
	window := time.Duration(claimWindow(wt.a.ttl)) * time.Millisecond
	if by := wt.c.expiryBound(wt.lastBusy, window); wt.lease == 0 && time.Until(by) > window/2 {
		wt.metHolder(ho)
		return turn{token: ho.token, base: wt.lastBusy, claimBy: by}, true, nil
	}
	s := time.Now()
	token, ok := wt.q.claim(ctx, wt.a)
	if !ok {
		return turn{}, false, nil
	}
	wt.metHolder(ho)
	return turn{token: token, base: s}, true, nil
}

// stale reports whether ho came before our last busy attempt ran.
func (wt *waitTurn) stale(ho handoff) bool {
	if ho.at.Before(wt.lastBusy) {
		return true
	}
	return wt.answered && ho.sent != 0 && wt.busy.at != 0 && ho.sent <= wt.busy.at
}

// metHolder reports the holder a hand-off came from to the AcquireEnd event.
func (wt *waitTurn) metHolder(ho handoff) {
	if wt.ev != nil && ho.holder != "" {
		wt.ev.metHandoff(ho.holder, ho.meta)
	}
}

// retry runs the next attempt. Redis failing while we wait (a reset
// connection, a fail-over, a restart, a moved slot) is not the end: we go on
// waiting, retrying with back-off, until the wait or ctx ends; the queue
// entry is refreshed by the next attempt that gets through. An error that
// trying again cannot fix (transientFailure) ends the wait at once.
func (wt *waitTurn) retry(ctx context.Context) (t turn, done bool, err error) {
	s := time.Now()
	r, err := wt.q.retry(ctx, wt.a)
	if err != nil {
		if ctx.Err() != nil {
			return wt.giveUp(ctx, errors.Join(wt.busyErr(), withCtxErr(ctx, err)), false)
		}
		if !transientFailure(err) {
			return wt.giveUp(ctx, err, false)
		}
		wt.failed(err)
		return turn{}, false, nil
	}
	wt.lastErr, wt.backoff = nil, 0
	if r.won { // fresh, or claimed a hand-off: the TTL was set by this request
		return turn{token: r.token, base: s, lk: r.lk}, true, nil
	}
	wt.lastBusy, wt.busy, wt.answered = s, r, true
	if r.split {
		wt.splits++
	} else {
		wt.splits = 0
	}
	if wt.ev != nil {
		wt.ev.Waited = true
		wt.ev.metHolders(r.holder, r.meta, r.metas)
	}
	return turn{}, false, nil
}

// failed records an attempt that failed on a transient error: the next one
// waits the grown back-off.
func (wt *waitTurn) failed(err error) {
	wt.lastErr, wt.backoff = err, growBackoff(wt.backoff)
	wt.c.log.Debug("lockmw: retrying after an error while waiting", "name", wt.name, "err", err, "backoff", wt.backoff)
}

// giveUp ends the wait without the lock, with cause. keep (the wait ran
// out) leaves the queue now and keeps a lock handed to us just then;
// otherwise the attempt is abandoned in the background.
func (wt *waitTurn) giveUp(ctx context.Context, cause error, keep bool) (t turn, done bool, err error) {
	if !keep {
		wt.q.abandon(wt.a.field)
		return turn{}, true, cause
	}
	s := time.Now()
	token, ok, err := wt.q.leave(ctx, wt.a)
	if ok {
		return turn{token: token, base: s}, true, nil // leave.lua gave it its full TTL
	}
	if err != nil {
		wt.q.abandon(wt.a.field) // try again in the background
	}
	return turn{}, true, cause
}

// busyErr is the error of a wait that ended without the lock: the last busy
// reply (a *BusyError), or ErrNotAcquired when no attempt was answered, joined
// with the last Redis error while Redis fails.
func (wt *waitTurn) busyErr() error {
	var err error = wt.busy.busy(wt.name)
	if !wt.answered {
		err = fmt.Errorf("%w: %q: no attempt was answered", ErrNotAcquired, wt.name)
	}
	if wt.lastErr != nil {
		return errors.Join(err, wt.lastErr)
	}
	return err
}
