package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/robfig/cron/v3"
)

// CronOnce returns a robfig/cron v3 job wrapper that runs a job at most once
// per tick across the instances whose crons wrap it with the same name,
// with the semantics of [Locker] for gocron: each run makes one attempt at
// the lock named l's key prefix + name (bounded by [WithLockTimeout]), holds
// it for at least the minimum hold ([WithMinHold]) so that instances whose
// ticks are a little apart run the tick once, and skips the run when
// another instance holds it.
//
// cron.JobWrapper is func(cron.Job) cron.Job: it has no job name, context or
// error, so the name is given here, one wrapper per job:
//
//	c.AddJob("@every 1m", cron.NewChain(scheduler.CronOnce(l, "report")).Then(report))
//
// (cron.WithChain would give every job of the cron one name, and so one
// lock.) A skipped run is logged at Debug level on the Locker's logger
// ([WithLogger]); a run skipped because Redis failed or did not answer in
// time, and a release that failed or found the lock lost, at Warn. A run
// that panics releases its lock, then the panic goes on (to cron.Recover,
// if the chain has it). As with gocron, the job does not stop when its lock
// is lost while it runs.
//
// It panics when l is nil or name is empty or makes an invalid lock name:
// configuration that can never be right.
func CronOnce(l *Locker, name string) cron.JobWrapper {
	if l == nil {
		panic(fmt.Sprintf("scheduler: CronOnce(nil, %q): a Locker is required", name))
	}
	if name == "" {
		panic(`scheduler: CronOnce(l, ""): the job name must not be empty`)
	}
	mustName(l.c.Mutex(l.opt.prefix+name), fmt.Sprintf("CronOnce(l, %q)", name))
	return func(j cron.Job) cron.Job {
		return cron.FuncJob(func() { l.runOnce(name, j) })
	}
}

// runOnce runs j under the lock of the job name, or skips it.
func (l *Locker) runOnce(name string, j cron.Job) {
	ctx := context.Background()
	lk, err := l.Lock(ctx, name)
	if errors.Is(err, lockmw.ErrNotAcquired) {
		l.opt.logger.Debug("scheduler: cron run skipped: another instance runs it", "job", name)
		return
	}
	if err != nil {
		l.opt.logger.Warn("scheduler: cron run skipped", "job", name, "err", err)
		return
	}
	defer func() {
		if err := lk.Unlock(ctx); err != nil {
			l.opt.logger.Warn("scheduler: cron run's release failed", "job", name, "err", err)
		}
	}()
	j.Run()
}

// mustName returns m, after panicking, as call, when m's name is not a
// valid lock name. A context that carries no hold answers HoldCount without
// a round trip, so this only checks the name.
func mustName(m *lockmw.Mutex, call string) *lockmw.Mutex {
	if _, err := m.HoldCount(context.Background()); errors.Is(err, lockmw.ErrInvalidName) {
		panic(fmt.Sprintf("scheduler: %s: %v", call, err))
	}
	return m
}
