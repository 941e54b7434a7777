package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrBusy reports that [Locker.Lock] found the job's lock held by
	// another instance, which runs this tick: gocron skips the run (its
	// AfterLockError listener gets the error). The error also matches
	// lockmw.ErrNotAcquired, and [errors.As] finds the *lockmw.BusyError in
	// it that says who holds the lock.
	ErrBusy = errors.New("scheduler: job runs elsewhere")

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

// busyError is Locker.Lock's error for a job whose lock another instance
// holds. Its message says what is true of the holder's lock: it is
// released when that run ends (at its minimum hold at the earliest), and
// its TTL, renewed while the run lasts, bounds nothing until then; the
// *lockmw.BusyError it wraps gives the TTL as Redis saw it.
type busyError struct {
	job  string
	busy *lockmw.BusyError
}

func (e *busyError) Error() string {
	return fmt.Sprintf("scheduler: job %q skipped (busy): lock %q is held by %q for a run of its own, "+
		"released when that run ends (at its minimum hold at the earliest)%s", e.job, e.busy.Name, e.busy.Holder, ttlNote(e.busy.TTL))
}

// ttlNote says what the holder's remaining TTL means: the longest the lock
// outlives a holder that stops renewing it (a crash), not when it is
// released.
func ttlNote(ttl time.Duration) string {
	if ttl <= 0 {
		return ""
	}
	return fmt.Sprintf("; its TTL, %v, is renewed while the run lasts, and bounds the wait only if the holder dies", ttl.Round(time.Millisecond))
}

func (e *busyError) Unwrap() error { return e.busy }

func (e *busyError) Is(target error) bool { return target == ErrBusy }
