package rivermw

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/go-rlock/rlock/internal/construct"
	"github.com/go-rlock/rlock/lockmw"
)

// DefaultSnooze is the snooze delay when [WithSnooze] is not given: a busy
// job comes back after 1 to 1.5 seconds, about River's default fetch poll
// interval (1s), so that it is fetched again soon after its delay ends.
const DefaultSnooze = time.Second

// DefaultWait is how long a job waits for a busy key when [WithWait] is not
// given: 0, a single attempt, then a snooze.
const DefaultWait time.Duration = 0

// Unlimited is the default of [WithMaxSnoozes]: a busy job is snoozed as
// often as its key is found busy.
const Unlimited = -1

// Option configures the middleware made by [New]. New applies the options in
// order, then checks the result once: an invalid value, or a nil Option,
// makes it panic with one line naming the option and the value. Option
// constructors never panic.
type Option func(*options)

type options struct {
	key        func(ctx context.Context, job *rivertype.JobRow) string
	permits    int
	snooze     time.Duration
	wait       time.Duration
	maxSnoozes int
	prefix     string
	logger     *slog.Logger
}

// newOptions applies opts over the defaults, in order, then checks the
// result once; it panics, with one line naming the option and the value, on
// a nil Option or an invalid value.
func newOptions(opts []Option) options {
	o := options{
		key:        DefaultKey,
		permits:    1,
		snooze:     DefaultSnooze,
		wait:       DefaultWait,
		maxSnoozes: Unlimited,
		prefix:     DefaultKeyPrefix,
	}
	o = construct.Apply("rivermw", "New", o, opts, (*options).invalid)
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}

// invalid describes the first invalid value of o, "" when there is none.
func (o *options) invalid() string {
	switch {
	case o.key == nil:
		return "WithKey(nil): a key function is required"
	case o.permits < 1:
		return fmt.Sprintf("WithPermits(%d): must be at least 1", o.permits)
	case o.snooze <= 0:
		return fmt.Sprintf("WithSnooze(%v): must be positive", o.snooze)
	case o.wait < 0:
		return fmt.Sprintf("WithWait(%v): must not be negative", o.wait)
	case o.wait == lockmw.Forever:
		return "WithWait(lockmw.Forever): River's job timeout does not bound the middleware's wait; give a finite wait"
	case o.maxSnoozes < Unlimited:
		return fmt.Sprintf("WithMaxSnoozes(%d): must not be negative (or Unlimited)", o.maxSnoozes)
	}
	return ""
}

// WithKey sets the function that gives a job its key: jobs with the same key
// never run at the same time (or at most n with [WithPermits]). It is called
// once per attempt, before the job's args are decoded, on the worker's
// goroutine, so it reads the job's row (Kind, EncodedArgs, Queue, Metadata...)
// and must be safe for concurrent use. A key of "" runs that job without a
// lock: a key function is how a middleware installed on every kind (in
// river.Config.Middleware) picks the kinds it locks. The default is
// [DefaultKey]: the kind and a hash of the encoded args. A nil f panics in
// New.
func WithKey(f func(ctx context.Context, job *rivertype.JobRow) string) Option {
	return func(o *options) { o.key = f }
}

// WithPermits makes the key's lock a semaphore of n permits instead of a
// mutex, as [lockmw.WithPermits] does: at most n jobs with the same key run
// at once, across every River client. The default is 1: the key's lock, a
// mutex named prefix + "lock:" + K (see [WithKeyPrefix]). With n > 1 each
// attempt takes one permit of a lockmw.Semaphore named prefix + "limit:" + K,
// never a lock's name, so clients configured with 1 and with n > 1 never
// find a key of the wrong type (and, during a deploy that changes the limit,
// do not limit each other). A job that finds no free permit is busy, as with
// a busy lock.
//
// The number of permits of a key's semaphore is set by the first attempt
// that uses the key and kept until the key has been idle for a day
// (lockmw.Client.Semaphore: the first setting wins). On a quorum
// lockmw.Client (lockmw.NewQuorum) each permit is a quorum mutex and no
// count is kept: every worker's n is its own (lockmw.Semaphore).
//
// n < 1 panics in New.
func WithPermits(n int) Option {
	return func(o *options) { o.permits = n }
}

// WithSnooze sets the delay of a busy job's snooze (river.JobSnooze): the
// job goes back to the queue and is fetched again after a delay drawn
// uniformly from [d, 1.5d), without using an attempt. The jitter spreads the
// returns of jobs that found one key busy together, so that they do not all
// come back at the same instant to find it busy again. The default is
// [DefaultSnooze] (1s). d <= 0 panics in New: a zero snooze would fetch the
// job again at once, over and over, while the key stays busy.
func WithSnooze(d time.Duration) Option {
	return func(o *options) { o.snooze = d }
}

// WithWait sets how long a job waits for its busy key, in rlock's fair
// queue, before it is snoozed, as [lockmw.WithWait] does: 0 makes a single
// attempt. The wait also ends when the job's context does (the job was
// cancelled, the client stopped). River's job timeout (JobTimeout,
// Worker.Timeout) starts inside the worker, after the middleware, so it does
// not bound this wait: d is the only bound, and a waiting job holds one of
// its queue's MaxWorkers slots meanwhile (see the package documentation).
// The default is [DefaultWait] (0). A negative d, or lockmw.Forever, panics
// in New.
func WithWait(d time.Duration) Option {
	return func(o *options) { o.wait = d }
}

// WithMaxSnoozes caps how often a busy job is snoozed: once River's snooze
// count in the job's metadata ("snoozes") has reached n, a busy attempt
// fails instead, with an error matching [lockmw.ErrNotAcquired] (and
// [ErrBusy]), which uses an attempt and follows River's retry policy, until
// MaxAttempts discards the job. River never resets the count, so every busy
// attempt after the cap fails. n = 0 never snoozes: a busy attempt fails at
// once. The default is [Unlimited]: a busy job is snoozed for as long as its
// key stays busy. n < 0 other than Unlimited panics in New.
func WithMaxSnoozes(n int) Option {
	return func(o *options) { o.maxSnoozes = n }
}

// WithKeyPrefix sets the prefix of the middleware's Redis keys: the lock of
// key K is named prefix + "lock:" + K, its semaphore (see [WithPermits])
// prefix + "limit:" + K. The default is [DefaultKeyPrefix], "river:"; River
// keeps nothing in Redis, so only other users of the Redis can collide.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithLogger sets where the middleware logs the one event it cannot return:
// a job that succeeded while releasing its lock failed for a Redis error
// (see [New]). The default, nil, is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
