package lockmw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A quorum waiter subscribes on every master (one hub each) and, like any
// waiter, tries once more after its subscriptions are in place, for the lock
// may have been freed before. It needs only a majority of them: a release
// that counts ran on a majority of masters, each publishing the unlock
// message, and any two majorities share a master. So it joins the hubs all
// at once and goes on when a majority joined — a paused master's hub may
// wait a read timeout for its connection — and its ready channel closes when
// a majority confirmed; the other joins finish in the background, and leave
// again at once when the wait is over by then.

// quorumJoin is a quorum waiter's registrations with the hubs.
type quorumJoin struct {
	mu     sync.Mutex
	joined []joinedHub
	left   bool
	stop   chan struct{} // closed when the wait is over

	confirmations int           // subscriptions confirmed since they were joined
	target        int           // confirmations that close ready; 0: not known yet
	ready         chan struct{} // closed once target confirmations came
	readyClosed   bool
}

// joinQuorum registers the waiter with every hub at once and returns when a
// majority did: confirmed says a majority of subscriptions was in place
// before the first attempt, else ready closes once a majority is.
func (wt *waitTurn) joinQuorum(ctx context.Context, sent time.Time) (ready []<-chan struct{}, confirmed bool, err error) {
	wt.w = newWaiter(wt.a.field)
	qj := &quorumJoin{stop: make(chan struct{}), ready: make(chan struct{})}
	wt.qj = qj
	need, n := wt.c.store.majority(), len(wt.c.hubs)
	type joinResult struct {
		ok  bool
		err error
	}
	results := make(chan joinResult, n)
	for _, hb := range wt.c.hubs {
		go func() {
			ns, ok, rc, err := hb.join(ctx, wt.k, wt.w, sent)
			if err == nil && !qj.add(joinedHub{hb, ns}, wt.w) {
				err = errWaitOver
			}
			switch {
			case err != nil, ok:
			case rc != nil:
				go qj.awaitConfirmation(rc)
			default: // confirmed already, but after the first attempt was sent: in place now
				qj.confirmNow()
			}
			results <- joinResult{ok: ok, err: err}
		}()
	}
	var joined, inPlace int
	var errs []error
	for pending := n; pending > 0 && joined < need && joined+pending >= need; pending-- {
		var r joinResult
		select {
		case r = <-results:
		case <-wt.c.closed: // a join may wait for a paused master's handshake: Close does not
			qj.leave(wt.w)
			return nil, false, fmt.Errorf("%w while waiting for %q", ErrClosed, wt.name)
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		joined++
		if r.ok {
			inPlace++
		}
	}
	switch {
	case joined < need:
		qj.leave(wt.w)
		return nil, false, errors.Join(errs...)
	case inPlace >= need:
		return nil, true, nil
	}
	qj.mu.Lock()
	qj.target = need - inPlace
	qj.check()
	qj.mu.Unlock()
	return []<-chan struct{}{qj.ready}, false, nil
}

// errWaitOver is a hub joined after the wait was over: left at once.
var errWaitOver = errors.New("lockmw: the wait is over")

// add records a hub joined; false when the wait is over (then it leaves
// it at once).
func (qj *quorumJoin) add(j joinedHub, w *waiter) bool {
	qj.mu.Lock()
	defer qj.mu.Unlock()
	if qj.left {
		j.h.leave(j.ns, w)
		return false
	}
	qj.joined = append(qj.joined, j)
	return true
}

// awaitConfirmation counts one subscription's confirmation towards ready,
// until the wait is over.
func (qj *quorumJoin) awaitConfirmation(rc <-chan struct{}) {
	select {
	case <-rc:
	case <-qj.stop:
		return
	}
	qj.mu.Lock()
	defer qj.mu.Unlock()
	qj.confirmations++
	qj.check()
}

// confirmNow counts a subscription that the hub had confirmed when it was
// joined, after the waiter's first attempt was sent (another waiter of the
// name subscribed it meanwhile): it is in place, and no confirmation of it
// will come. Uncounted, a waiter whose majority was such hubs waited for a
// ready that never closed, trying nothing until its wait ended.
func (qj *quorumJoin) confirmNow() {
	qj.mu.Lock()
	defer qj.mu.Unlock()
	qj.confirmations++
	qj.check()
}

// check closes ready once the confirmations reach the target. Called with
// qj.mu held.
func (qj *quorumJoin) check() {
	if qj.target > 0 && qj.confirmations >= qj.target && !qj.readyClosed {
		qj.readyClosed = true
		close(qj.ready)
	}
}

// leave unregisters w from every hub joined, now and from those joined
// later.
func (qj *quorumJoin) leave(w *waiter) {
	qj.mu.Lock()
	defer qj.mu.Unlock()
	if qj.left {
		return
	}
	qj.left = true
	close(qj.stop)
	for _, j := range qj.joined {
		j.h.leave(j.ns, w)
	}
}
