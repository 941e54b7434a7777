package asynqmw

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/go-rlock/rlock/internal/construct"
)

// DefaultWait is how long a task waits for a busy key when [WithWait] is
// not given: 0, a single attempt.
const DefaultWait time.Duration = 0

// Option configures the middleware made by [New]. New applies the options in
// order, then checks the result once: an invalid value, or a nil Option,
// makes it panic with one line naming the option and the value. Option
// constructors never panic.
type Option func(*options)

// BusyPolicy says what the middleware does with a task whose key is held by
// another task for the whole wait (see [WithWait]).
type BusyPolicy int

// The busy policies.
const (
	// Retry returns an error that [IsBusy] recognises, so that asynq retries
	// the task later. Configure the server with
	// IsFailure: func(err error) bool { return !asynqmw.IsBusy(err) }
	// so that these retries do not use up the task's retries.
	Retry BusyPolicy = iota
	// Skip drops the task: the handler does not run and the middleware
	// returns nil, so asynq counts the task as processed.
	Skip
)

func (p BusyPolicy) String() string {
	switch p {
	case Retry:
		return "Retry"
	case Skip:
		return "Skip"
	default:
		return fmt.Sprintf("BusyPolicy(%d)", int(p))
	}
}

type options struct {
	key     func(ctx context.Context, t *asynq.Task) string
	wait    time.Duration
	onBusy  BusyPolicy
	dedup   time.Duration
	prefix  string
	permits int
	onSkip  func(ctx context.Context, t *asynq.Task, reason error) // nil: none
	setSkip bool                                                   // WithOnSkip was given (a nil func panics)
}

// newOptions applies opts over the defaults, in order, then checks the
// result once; it panics, with one line naming the option and the value, on
// a nil Option or an invalid value.
func newOptions(opts []Option) options {
	o := options{
		key:     DefaultKey,
		wait:    DefaultWait,
		onBusy:  Retry,
		prefix:  DefaultKeyPrefix,
		permits: 1,
	}
	o = construct.Apply("asynqmw", "New", o, opts, (*options).invalid)
	return o
}

// invalid describes the first invalid value of o, "" when there is none.
func (o *options) invalid() string {
	switch {
	case o.key == nil:
		return "WithKey(nil): a key function is required"
	case o.wait < 0:
		return fmt.Sprintf("WithWait(%v): must not be negative", o.wait)
	case o.onBusy != Retry && o.onBusy != Skip:
		return fmt.Sprintf("WithOnBusy(%v): must be Retry or Skip", o.onBusy)
	case o.dedup < 0:
		return fmt.Sprintf("WithDedupWindow(%v): must not be negative", o.dedup)
	case o.permits < 1:
		return fmt.Sprintf("WithPermits(%d): must be at least 1", o.permits)
	case o.setSkip && o.onSkip == nil:
		return "WithOnSkip(nil): a function is required"
	case o.dedup > 0 && o.permits > 1:
		return fmt.Sprintf("WithDedupWindow(%v) with WithPermits(%d): a duplicate could run beside the first, before its mark is written; use 1 permit", o.dedup, o.permits)
	}
	return ""
}

// WithKey sets the function that gives a task its key: tasks with the same
// key never run at the same time, and share a dedup mark. It is called once
// per attempt, before the handler, on the worker's goroutine; it must be safe
// for concurrent use. A key of "" runs the task without a lock (and without
// de-duplication). The default is [DefaultKey]: the task type and a hash of
// the payload. A nil f panics in New.
func WithKey(f func(ctx context.Context, t *asynq.Task) string) Option {
	return func(o *options) { o.key = f }
}

// WithWait sets how long a task waits for its key when another task holds
// it, before the busy policy applies (see [WithOnBusy]), as
// [lockmw.WithWait] does: 0 makes a single attempt, [lockmw.Forever] waits
// until the task's context ends. The wait also ends when the task's context
// does. The default is [DefaultWait] (0: a single attempt, no wait), because
// a task's wait occupies one of the server's workers; prefer a short wait
// and let Retry hand the task back to the queue. A negative d panics in New.
func WithWait(d time.Duration) Option {
	return func(o *options) { o.wait = d }
}

// WithOnBusy sets what happens to a task whose key stayed busy for the whole
// wait: [Retry] (the default) or [Skip]. Any other value panics in New.
func WithOnBusy(p BusyPolicy) Option {
	return func(o *options) { o.onBusy = p }
}

// WithDedupWindow turns on de-duplication: after the handler succeeds for key
// K, a task with key K that gets the lock within d is skipped without running
// (the middleware returns nil). The mark is the key prefix + "done:" + K,
// written with PX d while the lock is still held, and checked after the lock
// is acquired, so a duplicate that waited for the lock sees it. A handler
// that fails, panics or loses its lock leaves no mark. The default is 0: off.
// A negative d panics in New, and so does d > 0 with a [WithPermits] above 1:
// tasks that share a semaphore run side by side, so a duplicate could start
// before the first one's mark is written.
func WithDedupWindow(d time.Duration) Option {
	return func(o *options) { o.dedup = d }
}

// WithKeyPrefix sets the prefix of the Redis keys the middleware uses: the
// lock of key K is named prefix + "lock:" + K, its semaphore (see
// [WithPermits]) prefix + "limit:" + K, and its dedup mark prefix + "done:" +
// K. The default is [DefaultKeyPrefix], "asynq:"; asynq's own keys
// ("asynq:{queue}:…", "asynq:servers…") never collide with these.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithPermits makes the key's lock a semaphore of n permits instead of a
// mutex, as [lockmw.WithPermits] does: at most n tasks with the same key run
// at once, across all workers and servers. The default is 1: the key's
// lock, a mutex named
// prefix + "lock:" + K (see [WithKeyPrefix]). With n > 1 each attempt takes
// one permit of a lockmw.Semaphore of n permits named prefix + "limit:" + K,
// never the name of a lock: servers with a limit of 1 and servers with a
// limit above 1 never take each other's lock or semaphore, nor limit each
// other (during a deploy that changes the limit, up to 1+n tasks of a key may
// run). An attempt that finds no free permit for the whole wait is busy,
// exactly as with a busy lock (see [WithWait], [WithOnBusy], [IsBusy]).
//
// The number of permits of a key's semaphore is set by the first attempt
// that uses the key and kept until the key has been idle for a day
// (lockmw.Client.Semaphore: the first setting wins), so a changed n applies
// to a key in use only after that; a new [WithKeyPrefix] applies it at once.
// On a quorum lockmw.Client (lockmw.NewQuorum) each permit is a quorum mutex
// and no count is kept: every worker's n is its own (lockmw.Semaphore).
//
// n < 1 panics in New, and so does n > 1 with [WithDedupWindow].
func WithPermits(n int) Option {
	return func(o *options) { o.permits = n }
}

// WithOnSkip sets a function called for each attempt of a task whose handler
// the middleware did not run: a duplicate (reason matches [ErrDuplicate];
// the middleware returns nil) or a task whose key stayed busy for the whole
// wait (reason matches [ErrBusy] and lockmw.ErrNotAcquired, under either
// policy: [Retry] returns reason itself, [Skip] returns nil). It is called
// on the worker's goroutine with the task's context, after the lock (if it
// was taken) was released, and must be safe for concurrent use. An attempt
// whose lock could not be taken for another reason (an invalid key, a Redis
// error) is not a skip but a failure: its error goes back to asynq (the
// server's ErrorHandler sees it).
//
// Every skip, and every failed acquisition, is also reported to the
// lockmw.Client's Skip hooks ([lockmw.Hooks.Skip], otelhooks' lock.skips
// counter), with the reason duplicate, busy, refused or error: f is for a
// count or a log line of the middleware's own. The default is none. A nil f
// panics in New.
func WithOnSkip(f func(ctx context.Context, t *asynq.Task, reason error)) Option {
	return func(o *options) { o.onSkip, o.setSkip = f, true }
}
