package scheduler

import "errors"

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrUnavailable reports that an acquisition attempt failed because
	// Redis failed or did not answer within the lock timeout: the lock may
	// be free, nobody knows. It never matches lockmw.ErrNotAcquired, which
	// reports a lock held by another instance.
	ErrUnavailable = errors.New("scheduler: redis unavailable")

	// ErrNotLeader is matched by every error of [Elector.IsLeader]: another
	// instance leads (the error then matches lockmw.ErrNotAcquired too),
	// the leadership was just lost (lockmw.ErrLockLost or lockmw.ErrClosed),
	// Redis failed ([ErrUnavailable]) or the Elector is closed.
	ErrNotLeader = errors.New("scheduler: not the leader")
)
