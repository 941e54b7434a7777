package lockmw

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"time"
)

// WithLock runs fn while holding m, and releases m when fn returns or panics
// (a panic goes on after the release). m is a *[Mutex], or a *[Semaphore]
// (fn then runs with one permit), a *[MultiLock] (fn runs holding every
// member), or any [Locker]. It is Redisson's "run
// this action inside the lock" without Lock and Unlock in sight:
//
//	err := lockmw.WithLock(ctx, c.Mutex("invoice:42"), func(ctx context.Context) error {
//		return bill(ctx, 42)
//	})
//
// The lock is taken as by [Mutex.TryLock] with the wait of [WithWait]
// (default [DefaultWait], Forever: until ctx ends) and the lease of
// [WithLease] (default none: the watchdog renews it while fn runs). fn gets the hold context:
// passing it (or a context derived from it) to a nested WithLock, [Do] or
// wrapped call on the same Client and lock name re-enters instead of
// deadlocking, and it is cancelled with cause [ErrLockLost] when the lock is
// lost, [ErrClosed] when the Client is closed.
//
// The error is
//   - the acquisition's error when the lock was not taken; fn is not called.
//     It matches [ErrNotAcquired] when the lock stayed busy for the whole
//     wait (joined with ctx's error when ctx ended first), [ErrClosed] after
//     Close, [ErrInvalidName] for a mutex with a bad name;
//   - an error matching [ErrInvalidArgument] when m (or the *Mutex or
//     *Semaphore inside it) or fn is nil or an option
//     is out of range (a negative [WithWait], [WithLease] or [WithMinHold],
//     a nil [WithAcquireContext], a [WithReleaseRetry] out of range); fn is
//     not called;
//   - when [WithAcquireContext]'s context, or ctx, ended before the lock was
//     taken: that context's error joined with its cause; fn is not called;
//   - otherwise fn's error, joined with an error matching [ErrLockLost] when
//     the lock was lost while fn ran (renewal found it gone, it was force
//     unlocked, or fn outlived its lease), even when fn returned nil: mutual
//     exclusion may have been broken and the caller must know; joined with
//     [ErrClosed] when the Client was closed while fn ran; and joined with
//     the release's error when releasing failed (Redis down). The release's
//     error is also handed to [WithOnRelease]. When the lock was lost or its
//     release failed, the error is a *[HoldError] that tells these apart;
//     otherwise it is fn's error, unchanged.
//
// [WithAcquireContext] bounds the acquisition alone, [WithMinHold] keeps the
// lock a while after a short fn, and [WithReleaseRetry] retries a failed
// release in the background.
//
// WithLock is safe for concurrent use; concurrent calls on one lock name run
// fn one at a time, across goroutines, Clients and processes.
func WithLock(ctx context.Context, m Locker, fn func(ctx context.Context) error, opts ...CallOption) error {
	if err := checkLocker("WithLock", m); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: WithLock(%q): nil fn", ErrInvalidArgument, m.Name())
	}
	o := newCallOptions(opts)
	if o.err != nil {
		return o.err
	}
	_, err := run(ctx, m, &o, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// Do is [WithLock] for a function with a result: it runs fn while holding m
// and returns fn's result with the error WithLock would return. The result
// is fn's even when the error is not nil because the lock was lost or its
// release failed; when fn did not run, it is the zero T.
func Do[T any](ctx context.Context, m Locker, fn func(ctx context.Context) (T, error), opts ...CallOption) (T, error) {
	var zero T
	if err := checkLocker("Do", m); err != nil {
		return zero, err
	}
	if fn == nil {
		return zero, fmt.Errorf("%w: Do(%q): nil fn", ErrInvalidArgument, m.Name())
	}
	o := newCallOptions(opts)
	if o.err != nil {
		return zero, o.err
	}
	return run(ctx, m, &o, fn)
}

// Wrap returns fn guarded by a lock of c whose name is computed from each
// call's argument: Go's type-safe form of Redisson's @RequestLockable, whose
// key is "lock.<class>.<method>#<argument>". Declare it once and call it as
// the original function:
//
//	charge := lockmw.Wrap(c, func(id string) string { return "lock.billing.charge#" + id }, chargeOrder)
//	receipt, err := charge(ctx, "order-42")
//
// Each call locks the name key(a) as [Do] does (a [Mutex], or with
// [WithPermits] a [Semaphore] of that many permits), with opts, runs fn(hctx, a)
// with the hold context and returns its result and an error as [Do] does. So
// calls with the same key run one at a time (across goroutines, Clients and
// processes), calls with different keys run in parallel, and a wrapped call
// made with the hold context of the same key (from inside fn) re-enters.
//
// The key is call-time data: a key that is not a valid lock name gives an
// error matching [ErrInvalidName] from that call, never a panic; a key
// function that returns "" runs that call without any lock (fn gets ctx,
// WithOnAcquire and WithOnRelease are not called), the rule every rlock adapter
// follows. With a nil key every call locks one name: fn's qualified name as
// [runtime.FuncForPC] gives it, such as "github.com/you/app/billing.chargeOrder",
// like Redisson's "lock.<class>.<method>". Function literals get names like
// "main.main.func1" and method values names like "pkg.(*T).M-fm" (the same
// for every receiver), and renaming or moving a function changes its name,
// so processes running two versions would not exclude each other: pass an
// explicit key in those cases.
//
// Wrap panics when c is nil (configuration that can never be right). A nil
// fn or a negative [WithWait] or [WithLease] is reported by every call as an
// error matching [ErrInvalidArgument]. The returned function is safe for
// concurrent use.
func Wrap[A, R any](c *Client, key func(A) string, fn func(ctx context.Context, a A) (R, error), opts ...CallOption) func(context.Context, A) (R, error) {
	if c == nil {
		panic("lockmw: Wrap(nil, ...): a *lockmw.Client is required")
	}
	o := newCallOptions(opts)
	if fn == nil {
		o.invalid(fmt.Errorf("%w: Wrap: nil fn", ErrInvalidArgument))
	}
	if o.err != nil {
		err := o.err
		return func(context.Context, A) (R, error) {
			var zero R
			return zero, err
		}
	}
	if key == nil {
		name := funcName(fn)
		key = func(A) string { return name }
	}
	return func(ctx context.Context, a A) (R, error) {
		k := key(a)
		if k == "" {
			return fn(ctx, a)
		}
		var l Locker = c.Mutex(k)
		if o.permits > 0 {
			l = c.Semaphore(k, o.permits)
		}
		return run(ctx, l, &o, func(hctx context.Context) (R, error) {
			return fn(hctx, a)
		})
	}
}

// funcName is f's qualified name, as runtime.FuncForPC reports it.
func funcName(f any) string {
	pc := reflect.ValueOf(f).Pointer()
	if fn := runtime.FuncForPC(pc); fn != nil && fn.Name() != "" {
		return fn.Name()
	}
	return fmt.Sprintf("func@%#x", pc)
}

// run is the body of WithLock, Do and Wrap: acquire, call fn with the hold
// context, release (also on panic) and report what happened to the lock
// meanwhile.
func run[T any](ctx context.Context, m Locker, o *callOptions, fn func(ctx context.Context) (T, error)) (res T, err error) {
	start := time.Now()
	hctx, end, err := o.acquire(ctx, m)
	if err != nil {
		return res, err
	}
	name := m.Name()
	returned := false
	defer func() {
		lost := lossOf(ctx, hctx, name)
		relErr := o.release(m, hctx, start)
		end()
		if o.onRelease != nil {
			o.onRelease(ctx, name, relErr)
		}
		if returned && (lost != nil || relErr != nil) { // when fn panicked, the panic goes on
			err = &HoldError{Name: name, Err: err, Lost: lost, Release: relErr}
		}
	}()
	if o.onAcquire != nil {
		o.onAcquire(hctx, name)
	}
	res, err = fn(hctx)
	returned = true
	return res, err
}

// acquire takes m with the call's wait and lease, bounded by the
// acquisition context when there is one. end is called once the hold is over.
func (o *callOptions) acquire(ctx context.Context, m Locker) (hctx context.Context, end func(), err error) {
	if o.actx != nil {
		return acquireWithin(ctx, o.actx, m, o.wait, o.lease)
	}
	hctx, err = m.TryLock(ctx, o.wait, o.lease)
	return hctx, func() {}, err
}

// release gives the hold up: at once, or with a minimum hold at start plus
// that when it is still to come. A release that fails for a Redis error is
// retried in the background with WithReleaseRetry.
func (o *callOptions) release(m Locker, hctx context.Context, start time.Time) error {
	own, _ := m.(ownLocker)
	rel := func() error {
		if at := start.Add(o.minHold); o.minHold > 0 && time.Now().Before(at) {
			if own != nil {
				return own.UnlockAt(hctx, at)
			}
			time.Sleep(time.Until(at)) // another package's Locker: keep it that long
		}
		return m.Unlock(hctx)
	}
	err := rel()
	if o.retry != nil && retryable(hctx, err) {
		var done <-chan struct{}
		if own != nil {
			done = own.client().Done()
		}
		o.retry.start(hctx, rel, done, nil)
	}
	return err
}

// lossOf says whether the hold behind hctx ended, or outlived its lease,
// while fn ran: the cause of hctx when it is ErrLockLost or ErrClosed and did
// not come from the caller's ctx (an outer lock's loss is the outer call's to
// report), or an ErrLockLost error when hctx's own deadline, earlier than
// ctx's, has passed: that deadline is the lease end. It is nil when the lock
// was held throughout, or only the caller's ctx ended.
func lossOf(ctx, hctx context.Context, name string) error {
	cause := context.Cause(hctx)
	if (errors.Is(cause, ErrLockLost) || errors.Is(cause, ErrClosed)) && !errors.Is(context.Cause(ctx), cause) {
		return cause
	}
	if dl, ok := hctx.Deadline(); ok && !time.Now().Before(dl) {
		if cdl, ok := ctx.Deadline(); !ok || dl.Before(cdl) {
			return fmt.Errorf("%w: %q: the call outlived its lease", ErrLockLost, name)
		}
	}
	return nil
}
