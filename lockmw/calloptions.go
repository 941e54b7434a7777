package lockmw

import (
	"context"
	"fmt"
	"time"
)

// CallOption configures one call of [WithLock] or [Do], or every call of a
// function made by [Wrap].
type CallOption func(*callOptions)

type callOptions struct {
	wait      time.Duration
	lease     time.Duration
	onAcquire func(ctx context.Context, name string)
	onRelease func(ctx context.Context, name string, err error)
	err       error // the first invalid option, returned by every call
}

// newCallOptions applies opts over the defaults: wait Forever, lease 0
// (watchdog), no callbacks.
func newCallOptions(opts []CallOption) callOptions {
	o := callOptions{wait: Forever}
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
// caller's context ends. The default (WithWait not given) is Forever. A
// negative d is call-time data, not configuration: the call returns an error
// matching [ErrInvalidArgument] and fn is not run.
func WithWait(d time.Duration) CallOption {
	return func(o *callOptions) {
		if d < 0 {
			o.invalid(fmt.Errorf("%w: WithWait(%v): negative wait", ErrInvalidArgument, d))
			return
		}
		o.wait = d
	}
}

// WithLease sets the lease of the lock, as the lease of [Mutex.TryLock]:
// with d > 0 the lock expires d after it was taken and nothing renews it, and
// fn's context has a deadline at the lease end; a call whose fn outlives the
// lease returns an error matching [ErrLockLost]. The default (WithLease not
// given, or 0) is no lease: the Client's watchdog renews the lock until fn
// returns. A negative d makes the call return an error matching
// [ErrInvalidArgument] without running fn.
func WithLease(d time.Duration) CallOption {
	return func(o *callOptions) {
		if d < 0 {
			o.invalid(fmt.Errorf("%w: WithLease(%v): negative lease", ErrInvalidArgument, d))
			return
		}
		o.lease = d
	}
}

// OnAcquire sets a callback run on the caller's goroutine right after the
// lock is acquired (or re-entered) and before fn, with the hold context (the
// one fn gets) and the lock name. It is not called when the lock is not
// acquired or the call runs without a lock. Several OnAcquire options are
// all called, in order. The default is none.
func OnAcquire(f func(ctx context.Context, name string)) CallOption {
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

// OnRelease sets a callback run on the caller's goroutine after the lock
// taken by a call has been released, also when fn panicked (before the panic
// goes on). It gets the caller's context, the lock name and what the release
// returned (see [Mutex.Unlock]): nil, an error matching [ErrLockLost] when the
// lock was found lost, or the Redis error when the release failed. Several
// OnRelease options are all called, in order. The default is none.
func OnRelease(f func(ctx context.Context, name string, err error)) CallOption {
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
