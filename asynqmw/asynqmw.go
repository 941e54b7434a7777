package asynqmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
)

// bookkeepingTimeout bounds writing the dedup mark, which runs detached from
// the task's context so that a handler that succeeded just as that context
// ended still leaves its mark.
const bookkeepingTimeout = lockmw.DefaultReleaseTimeout

// New returns middleware that runs each task holding the lock of its key
// (see [WithKey]) on c, so that tasks with the same key never run at the same
// time, on any number of workers and servers sharing c's Redis; tasks with
// different keys run in parallel up to the servers' concurrency. With
// [WithPermits](n), n > 1, each task holds one of n permits of its key's
// semaphore instead, so that at most n tasks with the same key run at once;
// below, "the lock" is then the permit. The returned middleware is safe for
// concurrent use; c must stay open while servers use it.
//
// For each attempt of a task it:
//
//   - computes the key; "" runs the handler without a lock;
//   - tries to lock prefix+"lock:"+key (with a limit above 1, to take a
//     permit of the semaphore prefix+"limit:"+key), waiting at most the
//     [WithWait] time. If the key stays busy (no permit is free), [Retry]
//     returns an error that [IsBusy] recognises and that matches
//     lockmw.ErrNotAcquired, and [Skip] returns nil without running the
//     handler. A key that is not a valid lock name (control characters,
//     longer than lockmw.MaxNameLen, invalid UTF-8) gives an error matching
//     lockmw.ErrInvalidName and asynq.SkipRetry, so the task is archived at
//     once;
//   - with a dedup window, returns nil without running the handler if the
//     key's mark is present (see [WithDedupWindow]): a duplicate;
//   - runs the handler with the lock's hold context, derived from the task's
//     context: if the lock is lost (force-unlocked, or renewals failed until
//     it could have expired) that context is cancelled with cause
//     lockmw.ErrLockLost. The middleware's error then matches
//     lockmw.ErrLockLost, joined with the handler's error, even when the
//     handler returned nil, so asynq retries the task;
//   - on success, writes the dedup mark (when on) and unlocks. The lock is
//     released also when the handler fails or panics.
//
// A duplicate and a busy attempt are skips: each is reported to the
// [WithOnSkip] function, with a reason matching [ErrDuplicate] or [ErrBusy],
// and to c's Skip hooks ([lockmw.Hooks.Skip]; otelhooks counts them in
// lock.skips, with reason duplicate or busy and lock.adapter asynq). An
// attempt whose lock could not be taken for an invalid key or a Redis error
// is reported to the Skip hooks too (reason refused or error). The hooks'
// events of every lock carry the adapter asynq ([lockmw.WithAdapter]).
//
// With Retry, busy attempts go back to asynq's retry queue. A server whose
// IsFailure is func(err error) bool { return !asynqmw.IsBusy(err) } does not
// count them against the task's MaxRetry, so a task waits its turn for as
// long as its key stays busy; without it, each busy attempt uses one retry
// and the task may be archived without having run. A task enqueued with
// MaxRetry(0) is archived on its first busy attempt either way, since asynq
// checks the retry count before IsFailure: give such tasks Skip or a wait.
//
// A handler that succeeded is never run again because of the middleware's own
// bookkeeping: if the dedup mark cannot be written or the Unlock fails for a
// Redis error, the error is returned joined with asynq.RevokeTask, so asynq
// hands it to the server's ErrorHandler and drops the task instead of
// retrying it. A failed Unlock is retried in the background with back-off
// (10 attempts over about 25s; lockmw keeps renewing a hold until it is
// released) and, if the hold is lost meanwhile, the lock expires. If Unlock
// finds the lock was lost meanwhile, the error matches lockmw.ErrLockLost and
// the task is retried; with a dedup window the retry sees the mark and is
// skipped.
//
// Every lock has the task type as its group ([lockmw.WithGroup]): the
// lock's name with the type in place of the key, "asynq:lock:<type>" for
// "asynq:lock:<type>:<hash>" by default ("asynq:limit:<type>" for a
// semaphore under a limit), so otelhooks' metrics count one series per task
// type, not per payload or key; spans keep the full name.
//
// New panics if c is nil, an option is nil or an option's value is invalid
// (see [Option]).
func New(c *lockmw.Client, opts ...Option) asynq.MiddlewareFunc {
	if c == nil {
		panic("asynqmw: New(nil): a lockmw.Client is required")
	}
	mw := &middleware{c: c, o: newOptions(opts)}
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			return mw.process(ctx, t, next)
		})
	}
}

type middleware struct {
	c *lockmw.Client
	o options
}

// A run is one attempt of a task under its key's lock.
type run struct {
	mw         *middleware
	t          *asynq.Task
	next       asynq.Handler
	key        string
	locked     bool  // the lock was taken
	ran        bool  // the handler ran
	succeeded  bool  // the handler succeeded and the dedup mark (when on) was written
	duplicate  error // the reason of a duplicate's skip: the dedup mark was present
	lockedName string
}

// process runs the task's attempt through lockmw.WithLock, which releases the
// lock also when the handler panics and retries a failed release in the
// background (unlockRetry).
func (mw *middleware) process(ctx context.Context, t *asynq.Task, next asynq.Handler) error {
	key := mw.o.key(ctx, t)
	if key == "" {
		return next.ProcessTask(ctx, t)
	}
	l := mw.locker(key, t.Type())
	r := &run{mw: mw, t: t, next: next, key: key, lockedName: l.Name()}
	err := lockmw.WithLock(ctx, l, r.work, lockmw.WithWait(mw.o.wait), unlockRetry)
	if !r.locked {
		return mw.lockFailed(ctx, t, l, err)
	}
	if r.duplicate != nil {
		mw.skipped(ctx, t, l, lockmw.SkipDuplicate, r.duplicate)
	}
	return r.result(err)
}

// locker returns what an attempt of a task of type taskType with key
// takes: the key's lock, or one permit of its semaphore when the limit is
// above 1. The two never share a name, so instances configured either way
// never mistake one for the other (Redis would answer WRONGTYPE). Its group
// (lockmw.WithGroup), the bounded label of its metrics, is the name with
// the task type in place of the key.
func (mw *middleware) locker(key, taskType string) lockmw.Locker {
	if mw.o.permits > 1 {
		return mw.c.Semaphore(mw.o.prefix+"limit:"+key, mw.o.permits, lockmw.WithGroup(mw.o.prefix+"limit:"+taskType), adapter)
	}
	return mw.c.Mutex(mw.o.prefix+"lock:"+key, lockmw.WithGroup(mw.o.prefix+"lock:"+taskType), adapter)
}

// adapter names asynqmw in the hooks' events of its locks (LockInfo.Adapter).
var adapter = lockmw.WithAdapter(lockmw.AdapterAsynq)

// unlockRetry is the back-off of a release retried after a Redis error: 10
// attempts over about 25s, until one succeeds, the hold is found lost (the
// key expired meanwhile) or the lockmw.Client is closed.
var unlockRetry = lockmw.WithReleaseRetry(100*time.Millisecond, 5*time.Second, 10)

// work is the work done under the lock: the dedup check, the handler and
// the dedup mark.
func (r *run) work(hctx context.Context) error {
	r.locked = true
	t, o := r.t, r.mw.o
	var doneKey string // built only with a dedup window: an allocation per task saved without
	if o.dedup > 0 {
		doneKey = r.mw.c.Namespace() + o.prefix + "done:" + r.key
		exists := backend.NewCmd("exists", doneKey)
		_ = r.mw.c.Backend().Process(hctx, exists)
		n, err := exists.Int64()
		if err != nil {
			return fmt.Errorf("asynqmw: task %q: checking dedup mark %q: %w", t.Type(), doneKey, err)
		}
		if n > 0 {
			r.duplicate = duplicateError(t.Type(), doneKey)
			return nil
		}
	}
	r.ran = true
	if err := r.next.ProcessTask(hctx, t); err != nil {
		return err
	}
	if errors.Is(context.Cause(hctx), lockmw.ErrLockLost) {
		return fmt.Errorf("asynqmw: task %q: handler returned after the lock was lost", t.Type())
	}
	if o.dedup > 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(hctx), bookkeepingTimeout)
		err := r.mw.c.Backend().Process(sctx, backend.NewCmd("set", doneKey, "1", "px", max(o.dedup.Milliseconds(), 1)))
		cancel()
		if err != nil {
			return errors.Join(fmt.Errorf("asynqmw: task %q succeeded, but writing dedup mark %q failed: %w", t.Type(), doneKey, err), asynq.RevokeTask)
		}
	}
	r.succeeded = true
	return nil
}

// result turns WithLock's error, once the lock was taken, into the task's:
// a loss is told with an error of the work (with none, the work was a dedup
// skip or succeeded before Client.Close); a release that found the lock lost
// after the handler ran makes asynq retry the task; a release that failed
// after the handler succeeded revokes the task, so that it never runs twice.
func (r *run) result(err error) error {
	he, ok := errors.AsType[*lockmw.HoldError](err)
	if !ok || he.Name != r.lockedName {
		return err
	}
	res := he.Err
	if he.Lost != nil && res != nil && !errors.Is(res, he.Lost) {
		res = errors.Join(res, he.Lost)
	}
	switch rel := he.Release; {
	case rel == nil:
	case errors.Is(rel, lockmw.ErrLockLost):
		if r.ran && !errors.Is(res, lockmw.ErrLockLost) {
			// The loss went unnoticed until now: the handler may have
			// overlapped another run, so retry (a dedup mark, if set, makes
			// the retry a no-op).
			res = errors.Join(res, fmt.Errorf("asynqmw: task %q: %w", r.t.Type(), rel))
		}
	case r.succeeded:
		res = errors.Join(fmt.Errorf("asynqmw: task %q succeeded, but unlocking %q failed: %w", r.t.Type(), r.lockedName, rel), asynq.RevokeTask)
	default:
		res = errors.Join(res, fmt.Errorf("asynqmw: task %q: unlocking %q: %w", r.t.Type(), r.lockedName, rel))
	}
	return res
}

// lockFailed turns a failed acquisition of l into the task's result, and
// reports it: a busy key as a skip (WithOnSkip and the Skip hooks), any other
// failure to the Skip hooks only.
func (mw *middleware) lockFailed(ctx context.Context, t *asynq.Task, l lockmw.Locker, err error) error {
	switch {
	case errors.Is(err, lockmw.ErrNotAcquired):
		busy := &busyError{taskType: t.Type(), err: err}
		mw.skipped(ctx, t, l, lockmw.SkipBusy, busy)
		if mw.o.onBusy == Skip && ctx.Err() == nil {
			return nil
		}
		return busy
	case errors.Is(err, lockmw.ErrInvalidName):
		err = errors.Join(fmt.Errorf("asynqmw: task %q: invalid key: %w", t.Type(), err), asynq.SkipRetry)
	default:
		err = fmt.Errorf("asynqmw: task %q: locking %q: %w", t.Type(), l.Name(), err)
	}
	skip.Locked(ctx, mw.c, l, lockmw.SkipReasonOf(err), err)
	return err
}

// skipped reports a task skipped for reason: to the Client's Skip hooks and
// to WithOnSkip's function.
func (mw *middleware) skipped(ctx context.Context, t *asynq.Task, l lockmw.Locker, reason lockmw.SkipReason, err error) {
	skip.Locked(ctx, mw.c, l, reason, err)
	if mw.o.onSkip != nil {
		mw.o.onSkip(ctx, t, err)
	}
}
