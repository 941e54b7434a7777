package scheduler

import (
	"context"
	"fmt"

	"github.com/go-co-op/gocron/v2"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

var (
	_ gocron.Locker = (*Locker)(nil)
	_ gocron.Lock   = (*Lock)(nil)
)

// Locker is a gocron.Locker on lockmw: set it with
// gocron.WithDistributedLocker (or gocron.WithDistributedJobLocker) on every
// instance's scheduler, and each run of a job executes on one instance only.
// It is safe for concurrent use and holds no resources of its own: it needs
// no Close.
//
// gocron never calls a Locker when the scheduler has an Elector
// (gocron.WithDistributedElector): then only the leader runs jobs and the
// jobs are not locked.
type Locker struct {
	c   *lockmw.Client
	opt options
}

// NewLocker returns a Locker that takes its locks through c, the lock of a job
// being the key prefix (see [WithKeyPrefix]) followed by gocron's job name.
// It panics when c is nil or an option is invalid.
func NewLocker(c *lockmw.Client, opts ...Option) *Locker {
	if c == nil {
		panic("scheduler: NewLocker(nil): a lockmw.Client is required")
	}
	return &Locker{c: c, opt: newOptions("NewLocker", opts)}
}

// Lock makes one attempt to take the lock of the job called key (gocron's
// job name), bounded by the lock timeout ([WithLockTimeout]) and by ctx; it
// never waits for the lock. When another instance holds it, it returns an
// error matching [ErrBusy] and lockmw.ErrNotAcquired, which says who holds
// it, and gocron skips this run (it calls the job's AfterLockError listener
// and counts a skip). When Redis fails or
// does not answer in time it returns an error matching [ErrUnavailable]
// instead, which never matches lockmw.ErrNotAcquired; gocron skips the run
// too. An invalid job name (empty, too long, with control characters) gives
// an error matching lockmw.ErrInvalidName. After the lockmw.Client is closed
// it returns an error matching lockmw.ErrClosed.
//
// Each error is also reported to the lockmw.Client's Skip hooks
// ([lockmw.Hooks.Skip]; otelhooks counts it in lock.skips, with
// lock.adapter gocron): reason busy, refused (an invalid job name) or error
// (Redis, the lock timeout, a closed Client, ctx). The lock's events carry
// lock.adapter gocron ([lockmw.WithAdapter]).
//
// While the job runs the watchdog of the lockmw.Client renews the lock, so a
// job may run longer than the watchdog timeout. gocron hands the job its own
// context, not the lock's: if the lock is lost while the job runs (renewals
// failed until it could have expired, or it was force-unlocked), the job is
// not stopped. The loss is reported by the client's hooks and logger, and by
// the Locker's logger ([WithLogger]) with the job's name; the job's Unlock
// then returns an error matching lockmw.ErrLockLost.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if key == "" {
		err := fmt.Errorf("scheduler: job %q: %w: empty job name", key, lockmw.ErrInvalidName)
		skip.NotLocked(ctx, l.c, lockmw.AdapterGocron, lockmw.SkipRefused, err)
		return nil, err
	}
	m := l.c.Mutex(l.opt.prefix+key, adapter)
	h, err := take(ctx, m, l.opt.lockTimeout, l.opt.minHold)
	if err != nil {
		err = classify(key, err)
		skip.Locked(ctx, l.c, m, lockmw.SkipReasonOf(err), err)
		return nil, err
	}
	log := l.opt.logger
	stop := h.watchLoss(func(cause error) {
		log.Warn("scheduler: job lost its lock and runs on unprotected", "job", key, "lock", m.Name(), "cause", cause)
	})
	return &Lock{job: key, h: h, stopWatch: stop}, nil
}

// adapter names the scheduler in the hooks' events of its locks
// (LockInfo.Adapter) and in the skips it reports.
var adapter = lockmw.WithAdapter(lockmw.AdapterGocron)

// Lock is a job's lock, returned by [Locker.Lock]; gocron unlocks it when the
// run ends.
type Lock struct {
	job       string
	h         *held
	stopWatch func() bool
}

// Unlock gives the lock up: at once, or, with a minimum hold d
// ([WithMinHold]), d after the attempt that took it began if that is still
// to come (renewal stops now and the key expires then).
//
// ctx is not used: gocron may hand over a context that is already cancelled
// (the scheduler shutting down) and the lock must still be released. The
// release is bounded by the lockmw.Client's release timeout
// (lockmw.WithReleaseTimeout). It returns an error matching
// lockmw.ErrLockLost when the lock was lost while the job ran,
// lockmw.ErrNotHeld when called again, or the Redis error: renewal has
// stopped then, and the release is retried in the background until it
// succeeds, the key is found expired, or the lockmw.Client is closed.
func (lk *Lock) Unlock(_ context.Context) error {
	lk.stopWatch()
	if err := lk.h.Release(); err != nil {
		return fmt.Errorf("scheduler: job %q: %w", lk.job, err)
	}
	return nil
}
