package lockmw

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Match them with [errors.Is]; errors returned by this
// package may wrap them or join them with a context error.
var (
	// ErrNotAcquired reports that the lock was held by another owner for the
	// whole wait. The error is a *[BusyError] that says who held it.
	ErrNotAcquired = errors.New("lockmw: lock not acquired")

	// ErrNotHeld reports an Unlock through a context that holds no level of
	// this lock: a context that never held it, a foreign one, or a level that
	// was already unlocked.
	ErrNotHeld = errors.New("lockmw: lock not held by this context")

	// ErrLockLost reports that a hold ended without its owner releasing it:
	// renewal found the lock gone or owned by someone else, renewals failed
	// until the key could have expired, the lease ran out before Unlock, or
	// the lock was force-unlocked. It is also the cause of the hold context.
	ErrLockLost = errors.New("lockmw: lock lost")

	// ErrClosed reports a call on a [Client] after [Client.Close], and is the
	// cause of hold contexts cancelled by Close.
	ErrClosed = errors.New("lockmw: client closed")

	// ErrInvalidName reports a lock name that cannot be used: empty, longer
	// than [MaxNameLen] bytes, not valid UTF-8, containing control
	// characters, named like the keys kept beside a lock (rlock_queue:,
	// rlock_waiters:, redisson_lock_token:, redisson_unlock_latch:), or (on a
	// cluster) one whose keys cannot share a hash slot.
	ErrInvalidName = errors.New("lockmw: invalid lock name")

	// ErrNotReplicated reports an acquisition that fewer replicas than
	// WithReplicaSync asks for acknowledged in time; the lock was released.
	ErrNotReplicated = errors.New("lockmw: lock not acknowledged by enough replicas")

	// ErrInvalidArgument reports a call-time argument out of range, such as
	// a negative wait or lease.
	ErrInvalidArgument = errors.New("lockmw: invalid argument")
)

// BusyError is returned when the lock stayed busy for the whole wait.
// errors.Is(err, ErrNotAcquired) is true for it.
type BusyError struct {
	Name string        // the lock name
	TTL  time.Duration // the holder's remaining TTL when last seen; -1 when the key has no TTL
	// Holder is the holder's hash field, "<clientID>:<ownerID>" ("" when unknown).
	// A Redisson holder shows as "<uuid>:<threadID>".
	Holder string
	// Metadata is the short string a hook stored with the hold (see
	// [Hooks.Metadata]); "" when none.
	Metadata string
}

// Error describes the holder and its TTL.
func (e *BusyError) Error() string {
	return fmt.Sprintf("lockmw: lock %q not acquired: held by %q for another %v", e.Name, e.Holder, e.TTL)
}

// Is reports whether target is ErrNotAcquired.
func (e *BusyError) Is(target error) bool { return target == ErrNotAcquired }
