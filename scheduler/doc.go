// Package scheduler connects rlock to gocron v2
// (github.com/go-co-op/gocron/v2), so that a fleet of instances that each run
// the same gocron scheduler runs every job once, not once per instance.
//
// It offers gocron's two ways to do so, both on lockmw locks:
//
//   - [Locker] (gocron.WithDistributedLocker): every run of a job takes the
//     job's lock, named "gocron:" + the job's name; the instance that gets
//     it runs the job, the others skip that run. Work spreads over the fleet.
//   - [Elector] (gocron.WithDistributedElector): the instance that leads
//     ([lockmw.Lead] on a leader lock) runs all jobs, the others none. Each
//     Elector campaigns in the background from [NewElector] to its Close or
//     its lockmw.Client's, and IsLeader answers from memory, with no round
//     trip per job run. When the leader closes, a standby takes over at once
//     (a hand-off); when it crashes, within the watchdog timeout plus one
//     renewal interval.
//
// gocron never calls a Locker when an Elector is set: pick one.
//
//	c := lockmw.New(rdb)
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(scheduler.NewLocker(c)))
//
// # One run per tick
//
// Instances do not tick at the same instant: their clocks differ by some
// milliseconds, and duration jobs tick from when each instance started. A
// lock released as soon as a fast job ends lets an instance that ticks a
// little later take it again and run the same tick a second time (see
// gocron#841). So the Locker keeps a job's lock for at least a minimum hold
// ([WithMinHold], 500ms by default) after it was taken: instances whose
// ticks are less than that apart run each tick once. Start duration jobs on
// a round time (gocron.WithStartAt) so that the instances' ticks line up.
//
// # Never stalling, never confusing busy with down
//
// [Locker.Lock] makes one attempt, bounded by its own short timeout
// ([WithLockTimeout], 500ms by default): a paused or unreachable Redis
// delays a job by that much at most, not by the go-redis read timeout. A job
// that runs elsewhere gives an error matching [ErrBusy] and
// lockmw.ErrNotAcquired; a Redis failure gives one matching [ErrUnavailable]
// and never ErrNotAcquired, so an AfterLockError listener can tell them
// apart.
//
// # Counting skipped runs
//
// gocron hands the Locker's error to the job's own listener,
// gocron.AfterLockError, for each run it skips:
//
//	gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, job string, err error) {
//		switch {
//		case errors.Is(err, scheduler.ErrBusy): // another instance runs this tick: expected
//		case errors.Is(err, scheduler.ErrUnavailable): // Redis failed: nobody may run it
//		}
//	}))
//
// A busy error says who holds the lock and that it is released when that
// run ends: the lock's TTL, renewed while the run lasts, bounds the wait
// only if the holder dies. The Locker also reports each skipped run to the
// lockmw.Client's Skip hooks ([lockmw.Hooks.Skip]), as the Elector does for
// each IsLeader that fails: otelhooks counts them in lock.skips, with reason
// busy, refused or error and lock.adapter gocron.
//
// # Leadership
//
// A leader stops leading the moment lockmw reports its lock lost (a renewal
// found it gone, or renewals failed until it could have expired): IsLeader
// fails from then on, with an error matching [ErrNotLeader] and
// lockmw.ErrLockLost, and the Elector campaigns again by itself. A standby's
// IsLeader fails with [ErrNotLeader] alone; Redis errors during the
// campaign are retried with back-off and never reported as
// [ErrUnavailable], which is the Locker's. A run that gocron started while
// this instance led goes on after a loss, as a Locker's job does (see
// below).
//
// # A lost lock does not stop the job
//
// While a job runs, the watchdog of the lockmw.Client renews its lock, so it
// may run as long as it needs. But gocron hands the job a context of its
// own, not the lock's hold context: when the lock is lost (Redis unreachable
// until the key could have expired, a forced unlock) the job goes on,
// unprotected. The loss is reported by the lockmw.Client's hooks and logger
// and by the Locker's logger ([WithLogger]). A job that must stop when its
// lock is lost should take a lockmw lock itself, inside the job, and watch
// the hold context.
//
// # Concurrency
//
// Lockers and Electors are safe for concurrent use, as is the Lock a Locker
// returns for one run (gocron unlocks it once).
package scheduler
