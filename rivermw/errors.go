package rivermw

import (
	"errors"
	"fmt"
)

// ErrBusy is matched (with [errors.Is]) by the error of a busy attempt past
// the snooze cap ([WithMaxSnoozes]): the job's key stayed busy for the whole
// wait and the job had been snoozed as often as allowed. That error also
// matches [lockmw.ErrNotAcquired], and [errors.As] finds the
// *[lockmw.BusyError] in it that says who held the key.
var ErrBusy = errors.New("rivermw: job key busy")

// busyError is the error of a busy attempt past the snooze cap.
type busyError struct {
	id      int64
	kind    string
	snoozes int64
	max     int
	err     error // from lockmw: a *lockmw.BusyError, maybe joined with a Redis error
}

func (e *busyError) Error() string {
	return fmt.Sprintf("rivermw: job %d (kind %q): key busy after %d snoozes (WithMaxSnoozes(%d)): %v", e.id, e.kind, e.snoozes, e.max, e.err)
}

func (e *busyError) Unwrap() error { return e.err }

func (e *busyError) Is(target error) bool { return target == ErrBusy }
