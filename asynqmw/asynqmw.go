package asynqmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/go-rlock/rlock/internal/unlockretry"
	"github.com/go-rlock/rlock/lockmw"
)

// bookkeepingTimeout bounds writing the dedup mark, which runs detached from
// the task's context so that a handler that succeeded just as that context
// ended still leaves its mark.
const bookkeepingTimeout = lockmw.DefaultReleaseTimeout

// New returns middleware that runs each task holding the lock of its key
// (see [WithKey]) on c, so that tasks with the same key never run at the same
// time, on any number of workers and servers sharing c's Redis; tasks with
// different keys run in parallel up to the servers' concurrency. The
// returned middleware is safe for concurrent use; c must stay open while
// servers use it.
//
// For each attempt of a task it:
//
//   - computes the key; "" runs the handler without a lock;
//   - tries to lock prefix+"lock:"+key, waiting at most the [WithWait] time.
//     If the key stays busy, [Retry] returns an error that [IsBusy]
//     recognises and that matches lockmw.ErrNotAcquired, and [Skip] returns
//     nil without running the handler. A key that is not a valid lock name
//     (control characters, longer than lockmw.MaxNameLen, invalid UTF-8)
//     gives an error matching lockmw.ErrInvalidName and asynq.SkipRetry, so
//     the task is archived at once;
//   - with a dedup window, returns nil without running the handler if the
//     key's mark is present (see [WithDedupWindow]);
//   - runs the handler with the lock's hold context, derived from the task's
//     context: if the lock is lost (force-unlocked, or renewals failed until
//     it could have expired) that context is cancelled with cause
//     lockmw.ErrLockLost. The middleware's error then matches
//     lockmw.ErrLockLost, joined with the handler's error, even when the
//     handler returned nil, so asynq retries the task;
//   - on success, writes the dedup mark (when on) and unlocks. The lock is
//     released also when the handler fails or panics.
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
// New panics if c is nil or an option is invalid.
func New(c *lockmw.Client, opts ...Option) asynq.MiddlewareFunc {
	if c == nil {
		panic("asynqmw: New(nil): a lockmw.Client is required")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	mw := &middleware{c: c, o: o}
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

func (mw *middleware) process(ctx context.Context, t *asynq.Task, next asynq.Handler) (err error) {
	key := mw.o.key(ctx, t)
	if key == "" {
		return next.ProcessTask(ctx, t)
	}
	m := mw.c.Mutex(mw.o.prefix + "lock:" + key)
	hctx, err := m.TryLock(ctx, mw.o.wait, 0)
	if err != nil {
		return mw.lockFailed(ctx, t, m.Name(), err)
	}

	lost := func() bool { return errors.Is(context.Cause(hctx), lockmw.ErrLockLost) }
	ran, succeeded := false, false
	defer func() {
		uerr := unlock(m, hctx, mw.c.Done())
		switch {
		case uerr == nil:
		case errors.Is(uerr, lockmw.ErrLockLost):
			if ran && !errors.Is(err, lockmw.ErrLockLost) {
				// The loss went unnoticed until now: the handler may have
				// overlapped another run, so retry (a dedup mark, if set,
				// makes the retry a no-op).
				err = errors.Join(err, fmt.Errorf("asynqmw: task %q: %w", t.Type(), uerr))
			}
		case succeeded:
			err = errors.Join(fmt.Errorf("asynqmw: task %q succeeded, but unlocking %q failed: %w", t.Type(), m.Name(), uerr), asynq.RevokeTask)
		default:
			err = errors.Join(err, fmt.Errorf("asynqmw: task %q: unlocking %q: %w", t.Type(), m.Name(), uerr))
		}
	}()

	doneKey := mw.o.prefix + "done:" + key
	if mw.o.dedup > 0 {
		n, xerr := mw.c.Redis().Exists(hctx, doneKey).Result()
		if xerr != nil {
			if lost() {
				xerr = errors.Join(xerr, context.Cause(hctx))
			}
			return fmt.Errorf("asynqmw: task %q: checking dedup mark %q: %w", t.Type(), doneKey, xerr)
		}
		if n > 0 {
			return nil
		}
	}

	ran = true
	herr := next.ProcessTask(hctx, t)
	if lost() {
		if herr == nil {
			herr = fmt.Errorf("asynqmw: task %q: handler returned after the lock was lost", t.Type())
		}
		if !errors.Is(herr, lockmw.ErrLockLost) {
			herr = errors.Join(herr, context.Cause(hctx))
		}
		return herr
	}
	if herr != nil {
		if cause := context.Cause(hctx); ctx.Err() == nil && cause != nil && !errors.Is(herr, cause) {
			herr = errors.Join(herr, cause) // the hold ended under the handler: Client.Close
		}
		return herr
	}
	if mw.o.dedup > 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		serr := mw.c.Redis().Set(sctx, doneKey, "1", mw.o.dedup).Err()
		cancel()
		if serr != nil {
			return errors.Join(fmt.Errorf("asynqmw: task %q succeeded, but writing dedup mark %q failed: %w", t.Type(), doneKey, serr), asynq.RevokeTask)
		}
	}
	succeeded = true
	return nil
}

// lockFailed turns a failed TryLock into the task's result.
func (mw *middleware) lockFailed(ctx context.Context, t *asynq.Task, name string, err error) error {
	switch {
	case errors.Is(err, lockmw.ErrNotAcquired):
		if mw.o.onBusy == Skip && ctx.Err() == nil {
			return nil
		}
		return &busyError{taskType: t.Type(), err: err}
	case errors.Is(err, lockmw.ErrInvalidName):
		return errors.Join(fmt.Errorf("asynqmw: task %q: invalid key: %w", t.Type(), err), asynq.SkipRetry)
	default:
		return fmt.Errorf("asynqmw: task %q: locking %q: %w", t.Type(), name, err)
	}
}

// unlock releases the hold. When the release fails for a Redis error, lockmw
// stops renewing the lock but leaves it in Redis until its TTL runs out, and
// the next task of the key would wait that long: so unlock retries in the
// background (unlockretry) until the release succeeds, the hold is found lost
// (the key expired meanwhile), unlockRetry.Tries attempts have failed, or the
// lockmw.Client is closed (done).
func unlock(m *lockmw.Mutex, hctx context.Context, done <-chan struct{}) error {
	return unlockretry.Do(hctx, func() error { return m.Unlock(hctx) }, done, unlockRetry, nil)
}

// unlockRetry is the back-off of an unlock retried after a Redis error.
var unlockRetry = unlockretry.Policy{First: 100 * time.Millisecond, Max: 5 * time.Second, Tries: 10}
