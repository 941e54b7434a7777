package asynqmw

import (
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// RetryDelay returns an asynq.RetryDelayFunc that waits busy before retrying
// a task whose key was busy ([IsBusy]) and asks next about any other error
// (asynq.DefaultRetryDelayFunc when next is nil). asynq's default delay, 15s
// and more, suits failures rather than a task waiting its turn: pick busy
// near the time a task of that key usually runs. asynq keeps retry times in
// whole seconds and moves due retries back to their queue every
// Config.DelayedTaskCheckInterval (5s by default), so a busy delay under a
// second means "at the next check after the current second ends, or sooner".
// A negative busy panics.
func RetryDelay(busy time.Duration, next asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if busy < 0 {
		panic(fmt.Sprintf("asynqmw: RetryDelay(%v, …): the busy delay must not be negative", busy))
	}
	if next == nil {
		next = asynq.DefaultRetryDelayFunc
	}
	return func(n int, err error, t *asynq.Task) time.Duration {
		if IsBusy(err) {
			return busy
		}
		return next(n, err, t)
	}
}
