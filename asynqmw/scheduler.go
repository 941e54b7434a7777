package asynqmw

import (
	"context"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/hibiken/asynq"
)

// RunScheduler runs a scheduler built by newScheduler only while this
// process leads m ([lockmw.Lead]): run it on every instance, and the
// periodic tasks are enqueued by one of them at a time, not once per
// instance.
//
// Each term builds a new scheduler (a stopped asynq.Scheduler cannot start
// again), starts it at once and shuts it down when the term ends: when
// leadership is lost (RunScheduler then campaigns again) or ctx ends (then
// it returns context.Cause(ctx)). A nil scheduler, the same instance as the
// previous term's, or an error from Start ends the term and is returned. A
// standby takes over at once when the leader's ctx ends, and within the
// watchdog timeout plus one renewal interval when the leader's process dies.
//
// A leader paused past its lock's TTL (a long GC pause, a frozen VM) may
// enqueue one more tick before it learns that it lost the lock: no fencing
// token reaches asynq's Enqueue. Make the periodic tasks idempotent, or
// de-duplicate them (asynq.Unique, or this package's WithDedupWindow).
func RunScheduler(ctx context.Context, m *lockmw.Mutex, newScheduler func() *asynq.Scheduler) error {
	if newScheduler == nil {
		return fmt.Errorf("%w: RunScheduler: nil newScheduler", lockmw.ErrInvalidArgument)
	}
	var last *asynq.Scheduler
	return lockmw.Lead(ctx, m, func(lead context.Context) error {
		s := newScheduler()
		switch {
		case s == nil:
			return fmt.Errorf("asynqmw: RunScheduler(%q): newScheduler returned nil", m.Name())
		case s == last:
			return fmt.Errorf("asynqmw: RunScheduler(%q): newScheduler returned the previous term's scheduler, which cannot start again", m.Name())
		}
		last = s
		if err := s.Start(); err != nil {
			return fmt.Errorf("asynqmw: RunScheduler(%q): start: %w", m.Name(), err)
		}
		<-lead.Done() // lost, or ctx ended
		s.Shutdown()
		return nil
	})
}
