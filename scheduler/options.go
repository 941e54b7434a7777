package scheduler

import (
	"fmt"
	"github.com/go-rlock/rlock/internal/construct"
	"log/slog"
	"time"
)

// DefaultKeyPrefix is the default prefix of lock names: a job's lock is
// DefaultKeyPrefix + its gocron name, an elector's DefaultKeyPrefix + its name.
const DefaultKeyPrefix = "gocron:"

// DefaultMinHold is how long after it was taken a job's lock is given up at
// the earliest by default (see [WithMinHold]).
//
// It must be longer than the spread of the instances' ticks (clock skew
// between hosts, which NTP keeps to a few milliseconds, plus scheduler jitter
// and a Redis round trip) and shorter than the interval of every job: a lock
// still held when the job's next tick comes makes every instance skip that
// tick. 500ms is half the shortest interval cron can express (every second,
// with seconds enabled), so per-second jobs still run on every tick, while
// ticks up to about half a second apart are recognised as one.
const DefaultMinHold = 500 * time.Millisecond

// DefaultLockTimeout bounds one acquisition attempt by default (see
// [WithLockTimeout]).
const DefaultLockTimeout = 500 * time.Millisecond

// Option configures a [Locker] or an [Elector]. [NewLocker] and [NewElector]
// apply the options in order, then check the result once: an invalid value,
// or a nil Option, makes them panic with one line naming the option and the
// value. Option constructors never panic.
type Option func(*options)

type options struct {
	prefix      string
	minHold     time.Duration
	lockTimeout time.Duration
	logger      *slog.Logger
}

// newOptions applies opts over the defaults, in order, then checks the
// result once; it panics, with one line naming the option and the value, on
// a nil Option or an invalid value. constructor names the caller.
func newOptions(constructor string, opts []Option) options {
	o := options{
		prefix:      DefaultKeyPrefix,
		minHold:     DefaultMinHold,
		lockTimeout: DefaultLockTimeout,
		logger:      slog.New(slog.DiscardHandler),
	}
	o = construct.Apply("scheduler", constructor, o, opts, (*options).invalid)
	return o
}

// invalid describes the first invalid value of o, "" when there is none.
func (o *options) invalid() string {
	switch {
	case o.minHold < 0:
		return fmt.Sprintf("WithMinHold(%v): must not be negative", o.minHold)
	case o.lockTimeout <= 0:
		return fmt.Sprintf("WithLockTimeout(%v): must be positive", o.lockTimeout)
	case o.logger == nil:
		return "WithLogger(nil): a logger is required"
	}
	return ""
}

// WithKeyPrefix sets the prefix of lock names. The default is
// [DefaultKeyPrefix] ("gocron:"). Schedulers that must exclude each other
// use the same prefix; "" uses the job names as they are.
func WithKeyPrefix(p string) Option {
	return func(o *options) { o.prefix = p }
}

// WithMinHold makes a [Locker] give a job's lock up no earlier than d after
// the attempt that took it began ([lockmw.Mutex.UnlockAt]): a job that ends
// sooner keeps the lock, unrenewed, until then, so an instance whose tick
// comes up to d later finds it busy and skips that tick instead of running it
// a second time (gocron#841). A job that runs longer than d releases at once
// when it ends. 0 releases at once.
//
// The default is [DefaultMinHold] (500ms). d must be shorter than the
// shortest interval of the jobs (lower it for sub-second jobs) and longer
// than the instances' clock skew. To give jobs different values, give them
// different Lockers with gocron.WithDistributedJobLocker. An [Elector]
// ignores it. d must not be negative (NewLocker and NewElector panic otherwise).
func WithMinHold(d time.Duration) Option {
	return func(o *options) { o.minHold = d }
}

// WithLockTimeout bounds one acquisition attempt of [Locker.Lock]: when
// Redis has not answered within d the call returns an error matching
// [ErrUnavailable], so a slow or paused Redis delays a job by at most d
// rather than by the go-redis read timeout. The default is
// [DefaultLockTimeout] (500ms). An [Elector] campaigns in the background
// and its IsLeader makes no attempt: there d bounds how long an IsLeader
// call made while the first campaign attempt is in flight waits for that
// attempt's outcome (see [Elector.IsLeader]). d must be positive
// (NewLocker and NewElector panic otherwise).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = d }
}

// WithLogger sets the logger that reports a job that lost its lock while it
// ran, and an elector that lost its leadership, with the job or elector name
// (the lockmw.Client's own logger and hooks report the lost lock too). The
// default is silent (a discarding logger). A nil logger makes
// NewLocker and NewElector panic.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
