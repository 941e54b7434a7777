package skip

import (
	"context"

	"github.com/go-rlock/rlock/lockmw"
)

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
