package asynqmw

import (
	"context"
	"fmt"
	"github.com/go-rlock/rlock/internal/construct"
	"time"

	"github.com/hibiken/asynq"
)

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
	key    func(ctx context.Context, t *asynq.Task) string
	wait   time.Duration
	onBusy BusyPolicy
	dedup  time.Duration
	prefix string
}

// newOptions applies opts over the defaults, in order, then checks the
// result once; it panics, with one line naming the option and the value, on
// a nil Option or an invalid value.
func newOptions(opts []Option) options {
	o := options{
		key:    DefaultKey,
		onBusy: Retry,
		prefix: DefaultKeyPrefix,
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
// it, before the busy policy applies (see [WithOnBusy]). The wait also ends
// when the task's context does. Waiting occupies one of the server's workers;
// prefer a short wait and let Retry hand the task back to the queue. The
// default is 0: a single attempt, no wait. A negative d panics in New.
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
// A negative d panics in New.
func WithDedupWindow(d time.Duration) Option {
	return func(o *options) { o.dedup = d }
}

// WithKeyPrefix sets the prefix of the Redis keys the middleware uses: the
// lock of key K is named prefix + "lock:" + K and its dedup mark is
// prefix + "done:" + K. The default is [DefaultKeyPrefix], "asynq:"; asynq's
// own keys ("asynq:{queue}:…", "asynq:servers…") never collide with these.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}
