package lockmw

import (
	"context"
	"fmt"
	"time"
)

// CallOption configures one call of [WithLock] or [Do], or every call of a
// function made by [Wrap]. Options are applied in order; a nil CallOption is
// skipped. An invalid value is call-time data: the call returns an error
// matching [ErrInvalidArgument] and does not run fn. See "Options" in the
// package documentation for the rules of the three option kinds.
type CallOption func(*callOptions)

// DefaultWait is how long [WithLock], [Do] and a [Wrap]ped function wait for
// a busy lock when [WithWait] is not given: [Forever], until the caller's
// context ends.
const DefaultWait = Forever

type callOptions struct {
	wait      time.Duration
	lease     time.Duration
	actx      context.Context // WithAcquireContext; nil: none
	minHold   time.Duration
	retry     *releaseRetry // WithReleaseRetry; nil: none
	onAcquire func(ctx context.Context, name string)
	onRelease func(ctx context.Context, name string, err error)
	permits   int   // WithPermits; 0: a Mutex per key
	err       error // the first invalid option, returned by every call
}

// newCallOptions applies opts over the defaults: wait DefaultWait, lease 0
// (watchdog), no acquisition context, no minimum hold, no release retry, no
// callbacks.
func newCallOptions(opts []CallOption) callOptions {
	o := callOptions{wait: DefaultWait}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

func (o *callOptions) invalid(err error) {
	if o.err == nil {
		o.err = err
	}
}

// WithWait sets how long a call waits for a busy lock, as the wait of
// [Mutex.TryLock]: 0 makes a single attempt, [Forever] waits until the
// caller's context ends. The default is [DefaultWait] (Forever), because the
// caller bounds a function's wait with its context. A negative d is
// call-time data, not configuration: the call returns an error matching
// [ErrInvalidArgument] and fn is not run.
func WithWait(d time.Duration) CallOption {
	return durationOption("WithWait", "wait", d, func(o *callOptions) *time.Duration { return &o.wait })
}

// WithLease sets the lease of the lock, as the lease of [Mutex.TryLock]:
// with d > 0 the lock expires d after it was taken and nothing renews it, and
// fn's context has a deadline at the lease end; a call whose fn outlives the
// lease returns an error matching [ErrLockLost]. The default (WithLease not
// given, or 0) is no lease: the Client's watchdog renews the lock until fn
// returns. A negative d makes the call return an error matching
// [ErrInvalidArgument] without running fn.
func WithLease(d time.Duration) CallOption {
	return durationOption("WithLease", "lease", d, func(o *callOptions) *time.Duration { return &o.lease })
}

// WithPermits makes every key of a [Wrap]ped function a [Semaphore] of n
// permits instead of a [Mutex]: at most n calls with the same key run at
// once, across goroutines, Clients and processes (and a call made from
// inside fn with its context takes another permit: permits are not
// reentrant). With [WithLock] and [Do], whose Locker is given, it has no
// effect. n < 1 is call-time data: every call returns an error matching
// [ErrInvalidArgument] and fn is not run.
func WithPermits(n int) CallOption {
	return func(o *callOptions) {
		if n < 1 {
			o.invalid(fmt.Errorf("%w: WithPermits(%d): want at least 1", ErrInvalidArgument, n))
			return
		}
		o.permits = n
	}
}

// durationOption is the CallOption name(d): it sets the duration field
// returns, or makes the call fail with ErrInvalidArgument when d is negative.
func durationOption(name, what string, d time.Duration, field func(*callOptions) *time.Duration) CallOption {
	return func(o *callOptions) {
		if d < 0 {
			o.invalid(fmt.Errorf("%w: %s(%v): negative %s", ErrInvalidArgument, name, d, what))
			return
		}
		*field(o) = d
	}
}

// WithAcquireContext bounds the acquisition by actx as well as by the call's
// context, and the acquisition only: when actx ends before the lock is taken,
// the call returns at once, whatever Redis does (a reply still on its way is
// abandoned, and a lock won late is given back in the background), with
// actx's error joined with its cause, and fn is not run. Once the lock is
// taken actx no longer matters: fn's hold context derives from the call's
// context alone and ends only when the hold or that context does. While the
// lock is being taken, its commands carry actx's deadline (go-redis uses it
// as the socket deadline with ContextTimeoutEnabled).
//
// It is a deadline on getting the lock that does not end the work done
// under it: pass context.WithTimeout(ctx, d), or a context that ends when the
// caller gives up. The default is none: the acquisition is bounded by the
// call's context and [WithWait] alone, and a Redis that does not answer
// blocks it for the go-redis read timeout. A nil actx makes the call return
// an error matching [ErrInvalidArgument] without running fn.
func WithAcquireContext(actx context.Context) CallOption {
	return func(o *callOptions) {
		if actx == nil {
			o.invalid(fmt.Errorf("%w: WithAcquireContext(nil): a context is required", ErrInvalidArgument))
			return
		}
		o.actx = actx
	}
}

// WithMinHold keeps the lock for at least d from the start of the call: when
// fn returns sooner, the lock is released with [Mutex.UnlockAt] at the start
// plus d (renewal stops when fn returns, and the key expires then), so that a
// caller who comes a little later finds it busy. A call whose fn runs longer
// releases at once. It stops twin runs of one scheduled tick on instances
// whose clocks differ. The default is 0: release at once. A negative d makes
// the call return an error matching [ErrInvalidArgument] without running fn.
func WithMinHold(d time.Duration) CallOption {
	return durationOption("WithMinHold", "minimum hold", d, func(o *callOptions) *time.Duration { return &o.minHold })
}

// WithReleaseRetry retries, in the background, a release that failed for a
// Redis error. The call returns that error as it would without this option
// (see [HoldError]); then a goroutine releases again after first, then after
// twice the previous delay up to max, at most tries times (0: no limit),
// until a release succeeds, one finds the lock lost or no longer held, one
// fails on a server reply that trying again cannot fix (WRONGTYPE, NOPERM, a
// script's error: as a waiting Lock ends on it), or the Client is closed
// ([Client.Done]). Without it a lock whose release failed is
// no longer renewed and expires within its TTL; the retries give it back
// sooner, so that the next holder does not wait for that. [WithOnRelease] gets
// the first release's error only.
//
// The default is no retry. first must be positive, max at least first and
// tries not negative: otherwise the call returns an error matching
// [ErrInvalidArgument] without running fn.
func WithReleaseRetry(first, max time.Duration, tries int) CallOption {
	return func(o *callOptions) {
		if first <= 0 || max < first || tries < 0 {
			o.invalid(fmt.Errorf("%w: WithReleaseRetry(%v, %v, %d): want 0 < first <= max and tries >= 0", ErrInvalidArgument, first, max, tries))
			return
		}
		o.retry = &releaseRetry{first: first, max: max, tries: tries}
	}
}

// WithOnAcquire sets a callback run on the caller's goroutine right after the
// lock is acquired (or re-entered) and before fn, with the hold context (the
// one fn gets) and the lock name. It is not called when the lock is not
// acquired or the call runs without a lock. Several WithOnAcquire options are
// all called, in order. The default is none; a nil f is skipped.
func WithOnAcquire(f func(ctx context.Context, name string)) CallOption {
	return func(o *callOptions) {
		if f == nil {
			return
		}
		if prev := o.onAcquire; prev != nil {
			o.onAcquire = func(ctx context.Context, name string) { prev(ctx, name); f(ctx, name) }
			return
		}
		o.onAcquire = f
	}
}

// WithOnRelease sets a callback run on the caller's goroutine after the lock
// taken by a call has been released, also when fn panicked (before the panic
// goes on). It gets the caller's context, the lock name and what the release
// returned (see [Mutex.Unlock]): nil, an error matching [ErrLockLost] when the
// lock was found lost, or the Redis error when the release failed. Several
// WithOnRelease options are all called, in order. The default is none; a nil
// f is skipped.
func WithOnRelease(f func(ctx context.Context, name string, err error)) CallOption {
	return func(o *callOptions) {
		if f == nil {
			return
		}
		if prev := o.onRelease; prev != nil {
			o.onRelease = func(ctx context.Context, name string, err error) { prev(ctx, name, err); f(ctx, name, err) }
			return
		}
		o.onRelease = f
	}
}
