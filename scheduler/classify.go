package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
)

// errTimedOut is the cause of an acquisition given up at the lock timeout.
var errTimedOut = errors.New("no reply within the lock timeout")

// classify turns an error of take for the job called job into the
// adapter's: a busy lock matches ErrBusy and lockmw.ErrNotAcquired (see
// busyError); Redis failures and timeouts match
// ErrUnavailable and never ErrNotAcquired; bad names, a closed client and
// the caller's context errors are wrapped as they are.
func classify(job string, err error) error {
	what := fmt.Sprintf("job %q", job)
	var busy *lockmw.BusyError
	switch {
	case errors.As(err, &busy):
		return &busyError{job: job, busy: busy}
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	case errors.Is(err, lockmw.ErrInvalidName), errors.Is(err, lockmw.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("scheduler: %s: %w", what, err)
	default:
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
}
