package rivermw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

// New returns River worker middleware that runs each job holding the lock of
// its key (see [WithKey]) on c, so that jobs with the same key never run at
// the same time, on any number of River clients sharing c's Redis; jobs with
// different keys run side by side up to their queues' MaxWorkers. With
// [WithPermits](n), n > 1, each job holds one of n permits of its key's
// semaphore instead, so that at most n jobs with the same key run at once;
// below, "the lock" is then the permit. Put it in river.Config.Middleware
// (every kind) or return it from a worker's Middleware method (one kind). It
// is safe for concurrent use; c must stay open while River clients use it.
//
// For each attempt of a job it:
//
//   - computes the key; "" runs the job without a lock;
//   - tries to lock prefix+"lock:"+key (with a limit above 1, to take a
//     permit of the semaphore prefix+"limit:"+key), waiting at most the
//     [WithWait] time. If the key stays busy, the job is snoozed
//     (river.JobSnooze, with the [WithSnooze] delay): River puts it back in
//     the queue without using an attempt and counts the snooze in the job's
//     metadata. Past the [WithMaxSnoozes] cap the attempt fails instead, with
//     an error matching [ErrBusy] and lockmw.ErrNotAcquired. The rest of the
//     middleware stack and the worker are not called: the job did not run.
//     A key that is not a valid lock name (control characters, longer than
//     lockmw.MaxNameLen, invalid UTF-8) cancels the job (river.JobCancel,
//     with an error matching lockmw.ErrInvalidName): no retry can fix it.
//     Any other failure to lock (Redis down, c closed, the job's context
//     ended during the wait) is the attempt's error, and River retries;
//   - calls doInner with the lock's hold context, derived from the job's
//     context: the rest of the stack, River's job timeout and the worker run
//     under it. If the lock is lost (force-unlocked, or renewals failed until
//     it could have expired) that context is cancelled with cause
//     lockmw.ErrLockLost, and the attempt's error matches lockmw.ErrLockLost,
//     joined with the worker's error, even when the worker returned nil, so
//     River retries the job;
//   - releases the lock, also when the worker fails or panics. If the
//     release finds the lock lost after a worker that saw nothing amiss, the
//     error matches lockmw.ErrLockLost and River retries the job (the job may
//     have overlapped another). If the release fails for a Redis error after
//     the worker succeeded, the job is completed, not retried, so that it
//     never runs twice for the middleware's bookkeeping: the failure is
//     logged ([WithLogger]), the release is retried in the background with
//     back-off (10 attempts over about 25s) and, failing that, the lock
//     expires within c's watchdog timeout.
//
// Each attempt whose job did not run because its lock was not taken (a
// snooze, the busy error past the cap, a cancel, a failure) is reported to
// c's Skip hooks ([lockmw.Hooks.Skip]; otelhooks counts it in lock.skips,
// with lock.adapter river): reason busy, refused (an invalid key) or error.
// Every lock's events carry lock.adapter river ([lockmw.WithAdapter]).
//
// Every lock has the job's kind as its group ([lockmw.WithGroup]): the
// lock's name with the kind in place of the key, "river:lock:<kind>" for
// "river:lock:<kind>:<hash>" by default ("river:limit:<kind>" for a
// semaphore under a limit), so otelhooks' metrics count one series per kind,
// not per job; spans keep the full name.
//
// New panics if c is nil, an option is nil or an option's value is invalid
// (see [Option]).
func New(c *lockmw.Client, opts ...Option) rivertype.WorkerMiddleware {
	if c == nil {
		panic("rivermw: New(nil): a lockmw.Client is required")
	}
	m := &middleware{c: c, o: newOptions(opts)}
	return m
}

// middleware is the rivertype.WorkerMiddleware that New returns.
type middleware struct {
	river.MiddlewareDefaults
	c *lockmw.Client
	o options
}

var _ rivertype.WorkerMiddleware = (*middleware)(nil)

// adapter names rivermw in the hooks' events of its locks (LockInfo.Adapter).
var adapter = lockmw.WithAdapter(lockmw.AdapterRiver)

// unlockRetry is the back-off of a release retried after a Redis error: 10
// attempts over about 25s, until one succeeds, the hold is found lost (the
// key expired meanwhile) or the lockmw.Client is closed.
var unlockRetry = lockmw.WithReleaseRetry(100*time.Millisecond, 5*time.Second, 10)

// Work runs one attempt of job under its key's lock (see [New]).
func (m *middleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	key := m.o.key(ctx, job)
	if key == "" {
		return doInner(ctx)
	}
	l := m.locker(key, job.Kind)
	locked := false
	err := lockmw.WithLock(ctx, l, func(hctx context.Context) error {
		locked = true
		return doInner(hctx)
	}, lockmw.WithWait(m.o.wait), unlockRetry)
	if !locked {
		skip.Locked(ctx, m.c, l, lockmw.SkipReasonOf(err), err)
		return m.notLocked(ctx, job, l.Name(), err)
	}
	return m.result(ctx, job, l.Name(), err)
}

// locker returns what an attempt of a job of kind with key takes: the key's
// lock, or one permit of its semaphore when the limit is above 1. The two
// never share a name. Its group (lockmw.WithGroup), the bounded label of its
// metrics, is the name with the kind in place of the key.
func (m *middleware) locker(key, kind string) lockmw.Locker {
	if m.o.permits > 1 {
		return m.c.Semaphore(m.o.prefix+"limit:"+key, m.o.permits, lockmw.WithGroup(m.o.prefix+"limit:"+kind), adapter)
	}
	return m.c.Mutex(m.o.prefix+"lock:"+key, lockmw.WithGroup(m.o.prefix+"lock:"+kind), adapter)
}

// notLocked turns a failed acquisition into the attempt's result: a snooze
// (or, past the cap, a busy error) for a busy key, a cancellation for a key
// that can never be locked, the error itself otherwise.
func (m *middleware) notLocked(ctx context.Context, job *rivertype.JobRow, name string, err error) error {
	switch {
	case errors.Is(err, lockmw.ErrNotAcquired) && ctx.Err() == nil:
		if m.o.maxSnoozes != Unlimited {
			if n := snoozeCount(job.Metadata); n >= int64(m.o.maxSnoozes) {
				return &busyError{id: job.ID, kind: job.Kind, snoozes: n, max: m.o.maxSnoozes, err: err}
			}
		}
		return river.JobSnooze(jitter(m.o.snooze))
	case errors.Is(err, lockmw.ErrInvalidName):
		return river.JobCancel(fmt.Errorf("rivermw: job %d (kind %q): invalid key: %w", job.ID, job.Kind, err))
	default:
		return fmt.Errorf("rivermw: job %d (kind %q): locking %q: %w", job.ID, job.Kind, name, err)
	}
}

// result turns WithLock's error, once the lock was taken, into the
// attempt's: unchanged, but for a release that failed for a Redis error
// after the worker succeeded with the lock held throughout, which completes
// the job (retrying it would run it twice) and is logged.
func (m *middleware) result(ctx context.Context, job *rivertype.JobRow, name string, err error) error {
	he, ok := errors.AsType[*lockmw.HoldError](err)
	if !ok || he.Name != name {
		return err
	}
	if he.Err == nil && he.Lost == nil && he.Release != nil && !errors.Is(he.Release, lockmw.ErrLockLost) {
		m.o.logger.WarnContext(ctx, "rivermw: job succeeded, but releasing its lock failed; retrying the release in the background, else the lock expires",
			"job_id", job.ID, "kind", job.Kind, "lock", name, "error", he.Release)
		return nil
	}
	return err
}
