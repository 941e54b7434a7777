package lockmw

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// Round trips bounded by the caller's context, whatever the go-redis
// client's options.
//
// go-redis sets a socket's deadline from the context's only when the client
// has ContextTimeoutEnabled, which is off by default: a read then waits for
// the client's ReadTimeout (5 s by default), and a paused server holds a call
// that long whatever its context says. So a call whose context has a deadline runs
// its round trips on a goroutine of its own (within) unless the client
// honours its deadline (Client.mustBound), and returns at the context's end.
// The goroutine finishes the command — go-redis does not retry once the
// context has ended, so it holds its connection until one read timeout at
// most — and hands its late reply to an undo (late): an acquisition or a
// re-entry that took effect after its caller gave up is undone when its reply
// arrives, even when the first clean-up ran before it.
//
// A context without a deadline costs nothing: the round trip runs on the
// caller's goroutine.

// readBound is the longest read timeout of nodes, 0 when one is unknown.
func readBound(nodes []backend.Backend) time.Duration {
	var longest time.Duration
	for _, b := range nodes {
		d := b.Info().ReadTimeout
		if d == 0 {
			return 0
		}
		longest = max(longest, d)
	}
	return longest
}

// mustBound reports whether a round trip on ctx must run through within to
// return at ctx's deadline: ctx has one and the client does not honour it.
// A context that can only be cancelled is left to go-redis, whatever the
// client's options: a paused server holds such a call until go-redis's read
// timeout at worst, and a hold context (cancellable, no deadline) re-enters
// without a goroutine.
func (c *Client) mustBound(ctx context.Context) bool {
	if c.ctxTrusted {
		return false
	}
	_, ok := ctx.Deadline()
	return ok
}

// The states of a handover.
const (
	attemptPending   int32 = iota // the goroutine is under way
	attemptTaken                  // it answered in time; the caller has the result
	attemptAbandoned              // the caller gave up
)

// handover is the one mechanism of lockmw for a result raced against its
// caller giving up (within, acquireWithin): the goroutine that produces it
// offers it, the caller waits for it or gives up, and exactly one of them
// wins. A result offered after the caller gave up stays the goroutine's,
// to undo.
type handover[T any] struct {
	state atomic.Int32
	done  chan T // buffered: the goroutine never blocks
}

func newHandover[T any]() *handover[T] { return &handover[T]{done: make(chan T, 1)} }

// offer hands v to the caller; false when the caller gave up, and v is
// the goroutine's to undo.
func (h *handover[T]) offer(v T) bool {
	if h.state.CompareAndSwap(attemptPending, attemptTaken) {
		h.done <- v
		return true
	}
	return false
}

// giveUp gives the result up; false when it was offered just in time: the
// caller then takes it (take).
func (h *handover[T]) giveUp() bool {
	return h.state.CompareAndSwap(attemptPending, attemptAbandoned)
}

// take waits for the result offered.
func (h *handover[T]) take() T { return <-h.done }

// taken reports whether the caller has the result.
func (h *handover[T]) taken() bool { return h.state.Load() == attemptTaken }

type boundedResult[T any] struct {
	v   T
	err error
}

// within runs f(ctx) on a goroutine of its own and returns its result, or
// ctxErr(ctx) as soon as ctx ends. The goroutine of a call given up on goes
// on until f returns and then calls late (when not nil) with f's result:
// late undoes what f did that nobody will use.
func within[T any](ctx context.Context, f func(context.Context) (T, error), late func(T, error)) (T, error) {
	b := &boundedCall[T]{ctx: ctx, f: f, late: late}
	b.done = make(chan boundedResult[T], 1)
	go b.run()
	select {
	case r := <-b.done:
		return r.v, r.err
	case <-ctx.Done():
	}
	if b.giveUp() {
		var zero T
		return zero, ctxErr(ctx)
	}
	r := b.take() // f returned just in time
	return r.v, r.err
}

// boundedCall is one call of within: what the goroutine runs, and its
// handover. One allocation besides the channel.
type boundedCall[T any] struct {
	handover[boundedResult[T]]
	ctx  context.Context
	f    func(context.Context) (T, error)
	late func(T, error)
}

// run runs the call and hands its result over, or to late when the caller
// gave up.
func (b *boundedCall[T]) run() {
	v, err := b.f(b.ctx)
	if !b.offer(boundedResult[T]{v, err}) && b.late != nil {
		b.late(v, err)
	}
}

// withinErr is within for a function that returns only an error.
func withinErr(ctx context.Context, f func(context.Context) error, late func(error)) error {
	_, err := within(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f(ctx)
	}, func(_ struct{}, err error) {
		if late != nil {
			late(err)
		}
	})
	return err
}

// bounded runs f on ctx, through within when the round trip must be bounded
// (mustBound), on the caller's goroutine otherwise; late undoes a result that
// arrived after the caller gave up (nil: nothing to undo). Every bounded
// round trip of lockmw goes through it, but for the hot path's (the first
// attempt, a re-entry, the release), which branch the same way without
// building a closure: one allocation less per call.
func bounded[T any](c *Client, ctx context.Context, f func(context.Context) (T, error), late func(T, error)) (T, error) {
	if !c.mustBound(ctx) {
		return f(ctx)
	}
	return within(ctx, f, late)
}

// boundedErr is bounded for a function that returns only an error.
func boundedErr(c *Client, ctx context.Context, f func(context.Context) error, late func(error)) error {
	if !c.mustBound(ctx) {
		return f(ctx)
	}
	return withinErr(ctx, f, late)
}
