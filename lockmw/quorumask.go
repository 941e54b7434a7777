package lockmw

import (
	"context"
	"time"
)

// How a quorum operation waits: for the masters that decide it, never for
// the others.
//
// An operation sends its request to every master at once and reads the
// answers as they arrive. It returns as soon as they decide the outcome (a
// majority acquired, renewed or released, or too few still can), so a
// master that is slow, paused or unreachable costs nothing while a majority
// answers: with go-redis's default options a paused master would answer only
// at its read timeout, 5 s, and a quorum that waited for it would take that
// long for every acquisition, renewal and release (Redlock's own algorithm
// never waits for the slowest node either).
//
// The masters that have not answered by then (stragglers) go on in the
// background, and their answers go to the operation's late function. Their
// context keeps the caller's deadline but not its cancellation — a caller
// cancels its context as it returns — and is cancelled stragglerGrace after
// the decision: a request to a master that answers is on its way by then,
// and a request already written still gets its reply or its read timeout,
// but go-redis sends nothing more for a master that does not answer — no
// retry, no wait for a connection of a pool its stuck requests hold. A straggler's request may
// run on its master long after the decision (when a paused master resumes,
// it runs what its connections buffered, in no fixed order): what each kind
// of request does then is safe by construction (see quorumend.go).

// stragglerGrace is how long the requests of an operation may still be
// sent, or re-sent, after it was decided: ample for a goroutine to be
// scheduled and take a pooled connection on a loaded machine, so that a
// master that answers gets every request; short beside go-redis's default
// read timeout, so that the requests to a master that does not answer wait
// for no connection of a pool its stuck requests hold, and are not re-sent.
const stragglerGrace = time.Second

// answer is one master's answer to one request of an operation.
type answer[T any] struct {
	i   int // the master, an index into the quorum's members
	v   T
	err error
}

// ask runs send for every master at once and hands each answer to decide,
// in the order they arrive, with the number of masters yet to answer; it
// returns once decide reports the outcome decided, or every master
// answered. The answers that arrive after that go to late (when not nil), on
// a goroutine of their own. decide runs on the caller's goroutine.
func ask[T any](ctx context.Context, q *quorumStore,
	send func(ctx context.Context, mb *member) (T, error),
	decide func(a answer[T], pending int) bool,
	late func(a answer[T])) {
	askSome(ctx, q, q.members, time.Time{}, send, decide, late)
}

// askSome is ask on the masters mbs only, and decided at until too (when
// not zero): the masters that have not answered by then are stragglers.
func askSome[T any](ctx context.Context, q *quorumStore, mbs []*member, until time.Time,
	send func(ctx context.Context, mb *member) (T, error),
	decide func(a answer[T], pending int) bool,
	late func(a answer[T])) {
	n := len(mbs)
	sctx, cancel := stragglerContext(ctx)
	stop := context.AfterFunc(ctx, cancel) // the caller gives up: no more sends, until the decision
	answers := make(chan answer[T], n)     // never blocks a sender
	for _, mb := range mbs {
		go func() {
			v, err := send(sctx, mb)
			answers <- answer[T]{i: mb.i, v: v, err: err}
		}()
	}
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timeout = t.C
	}
	pending := n
wait:
	for pending > 0 {
		select {
		case a := <-answers:
			pending--
			if decide(a, pending) {
				break wait
			}
		case <-timeout:
			break wait
		}
	}
	stop()
	if pending == 0 {
		cancel()
		return
	}
	time.AfterFunc(stragglerGrace, cancel)
	go func() {
		for range pending {
			a := <-answers
			if late != nil {
				late(a)
			}
		}
	}()
}

// stragglerContext is the context of an operation's requests: ctx's values
// and deadline, but not its cancellation, which ask passes on only until the
// decision (a caller that returns at once cancels its context, and the
// requests to the masters not waited for must still be sent).
func stragglerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(base, dl)
	}
	return context.WithCancel(base)
}
