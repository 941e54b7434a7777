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
	// whole wait. The error is a *[BusyError] that says who held it, joined
	// with the last Redis error when the wait ended while Redis failed (no
	// BusyError when no attempt was answered).
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

	// ErrNoPermission reports that the Redis user may not run a command
	// rlock needs, or touch one of a lock's keys or channels (the server's
	// NOPERM): never retried, it names the keys and channels the lock
	// uses. docs/security.md gives the ACL rule rlock needs; WithNamespace
	// puts them all under one prefix.
	ErrNoPermission = errors.New("lockmw: no permission")

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
	metas    []string // every holder's seen, for a MultiLock's AcquireEnd event
}

// Error describes the holder and its key's TTL, which a renewed hold
// keeps extending: the lock is free when the holder releases it, which
// may be much sooner, or when the key expires unrenewed.
func (e *BusyError) Error() string {
	if e.TTL < 0 {
		return fmt.Sprintf("lockmw: lock %q not acquired: held by %q (its key has no TTL)", e.Name, e.Holder)
	}
	return fmt.Sprintf("lockmw: lock %q not acquired: held by %q (its key expires in %v unless renewed)", e.Name, e.Holder, e.TTL)
}

// Is reports whether target is ErrNotAcquired.
func (e *BusyError) Is(target error) bool { return target == ErrNotAcquired }

// HoldError is the error of [WithLock], [Do] and a function made by [Wrap]
// when something happened to the lock while fn held it: the lock was lost,
// or releasing it failed. Find it with [errors.As]; [errors.Is] matches fn's
// error, the loss and the release's error through it. When nothing happened
// to the lock the error is fn's own, unchanged, and holds no HoldError of
// this call (it may hold one of a nested call: compare Name).
type HoldError struct {
	// Name is the lock name.
	Name string
	// Err is fn's error; nil when fn returned nil.
	Err error
	// Lost says why the hold ended while fn ran, when it did not end by the
	// caller's context: an error matching [ErrLockLost] (renewal found the
	// lock gone, it was force-unlocked, or fn outlived its lease) or
	// [ErrClosed] (the Client was closed). It is nil when the lock was held
	// throughout.
	Lost error
	// Release is what releasing the lock returned (see [Mutex.Unlock]): an
	// error matching [ErrLockLost] when the lock was found lost, or the Redis
	// error. It is nil when the release succeeded.
	Release error
}

// Error joins the messages of Err, Lost and Release, leaving out what an
// earlier one already says.
func (e *HoldError) Error() string { return e.joined().Error() }

// Unwrap returns Err, Lost and Release, those that are not nil.
func (e *HoldError) Unwrap() []error {
	errs := make([]error, 0, 3)
	for _, err := range []error{e.Err, e.Lost, e.Release} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// joined is Err joined with Lost and Release, leaving out what an earlier
// one already says (a loss is told once).
func (e *HoldError) joined() error {
	err := e.Err
	if e.Lost != nil && !errors.Is(err, e.Lost) {
		err = errors.Join(err, e.Lost)
	}
	if rel := e.Release; rel != nil && !errors.Is(err, rel) && !(errors.Is(rel, ErrLockLost) && errors.Is(err, ErrLockLost)) {
		err = errors.Join(err, rel)
	}
	return err
}
