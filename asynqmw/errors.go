package asynqmw

import (
	"errors"
	"fmt"
)

// ErrBusy is matched (with [errors.Is]) by the error the middleware returns
// under the [Retry] policy when a task's key stayed busy for the whole wait.
// That error also matches [lockmw.ErrNotAcquired], and [errors.As] finds the
// *[lockmw.BusyError] in it that says who held the key.
var ErrBusy = errors.New("asynqmw: task key busy")

// ErrDuplicate is matched (with [errors.Is]) by the reason [WithOnSkip]'s
// function gets for a task skipped as a duplicate: its key's dedup mark was
// present when it got the lock (see [WithDedupWindow]). The middleware
// itself returns nil for such a task, so that asynq counts it as
// processed; the reason names the task type and the mark.
var ErrDuplicate = errors.New("asynqmw: duplicate task skipped")

// IsBusy reports whether err is, or wraps, the error returned for a task whose
// key was busy (see [ErrBusy]). It is meant for asynq.Config:
//
//	IsFailure: func(err error) bool { return !asynqmw.IsBusy(err) },
//
// so that a busy task goes back to the retry queue without counting as a
// failure (see [RetryDelay] for its delay). It is false for nil, and for a
// bare lockmw.ErrNotAcquired that the handler itself returned.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// busyError is the Retry policy's error.
type busyError struct {
	taskType string
	err      error // from lockmw: a *lockmw.BusyError, maybe joined with a context error
}

func (e *busyError) Error() string {
	return fmt.Sprintf("asynqmw: task %q: key busy: %v", e.taskType, e.err)
}

func (e *busyError) Unwrap() error { return e.err }

func (e *busyError) Is(target error) bool { return target == ErrBusy }

// duplicateError is the reason of a duplicate's skip.
func duplicateError(taskType, mark string) error {
	return fmt.Errorf("%w: task %q: dedup mark %q present", ErrDuplicate, taskType, mark)
}
