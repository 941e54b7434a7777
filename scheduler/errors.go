package scheduler

import "errors"

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrUnavailable reports that an acquisition attempt of [Locker.Lock]
	// failed because Redis failed or did not answer within the lock timeout:
	// the lock may be free, nobody knows. It never matches lockmw.ErrNotAcquired, which
	// reports a lock held by another instance.
	ErrUnavailable = errors.New("scheduler: redis unavailable")

	// ErrNotLeader is matched by every error of [Elector.IsLeader]: the
	// Elector campaigns (another instance leads, or Redis fails and the
	// campaign retries), the leadership was lost (the error then matches
	// lockmw.ErrLockLost too), the lockmw.Client closed (lockmw.ErrClosed)
	// or the Elector is closed.
	ErrNotLeader = errors.New("scheduler: not the leader")
)
