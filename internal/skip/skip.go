package skip

import (
	"context"
	"errors"

	"github.com/go-rlock/rlock/lockmw"
)

// Reason is the reason of a skip whose lock was not taken because of err:
// busy when err holds a *lockmw.BusyError (the lock stayed busy for the
// whole wait, also when the caller's context ended during it; a wait in
// which Redis never answered matches lockmw.ErrNotAcquired without one, and
// is a failure), refused when
// the lock cannot be applied (lockmw.ErrInvalidName, lockmw.ErrUpgrade,
// errors.ErrUnsupported, lockmw.ErrInvalidArgument), failed otherwise (a
// Redis error, lockmw.ErrClosed, a context that ended before any reply).
func Reason(err error) lockmw.SkipReason {
	switch {
	case errors.As(err, new(*lockmw.BusyError)):
		return lockmw.SkipBusy
	case errors.Is(err, lockmw.ErrInvalidName), errors.Is(err, lockmw.ErrUpgrade),
		errors.Is(err, errors.ErrUnsupported), errors.Is(err, lockmw.ErrInvalidArgument):
		return lockmw.SkipRefused
	}
	return lockmw.SkipFailed
}

// Locked reports to c's Skip hooks that the work l guards did not run, for
// reason, with err (what the adapter returned or logged).
func Locked(ctx context.Context, c *lockmw.Client, l lockmw.Locker, reason lockmw.SkipReason, err error) {
	c.ReportSkip(ctx, lockmw.SkipEvent{LockInfo: lockmw.InfoOf(l), Reason: reason, Err: err})
}

// NotLocked reports a skip for which the adapter made no lock (a request
// with no key, a mounting that cannot know the route): only the adapter
// names it.
func NotLocked(ctx context.Context, c *lockmw.Client, adapter string, reason lockmw.SkipReason, err error) {
	c.ReportSkip(ctx, lockmw.SkipEvent{LockInfo: lockmw.LockInfo{Adapter: adapter}, Reason: reason, Err: err})
}
