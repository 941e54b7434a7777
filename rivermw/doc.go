// Package rivermw is River (github.com/riverqueue/river) worker middleware,
// built on rlock's lock, that runs jobs with the same key one at a time (or
// at most n at a time) across every River client, whichever process or
// queue works them.
//
// River's unique jobs act at insert time: a second job is not inserted while
// a first with the same unique properties exists in the states it names. That
// de-duplicates, and it cannot say "run these one at a time": two distinct
// jobs of one account, or a job and its retry beside a newer one, still run
// side by side. This middleware works at execution time instead: every
// attempt takes the lock of the job's key (by default its kind and a hash of
// its args) for as long as the worker runs, so jobs of one key never
// overlap, wherever they run; other keys run side by side.
//
//	locks := lockmw.New(rdb)
//	defer locks.Close()
//	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
//		Queues:     map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
//		Workers:    workers,
//		Middleware: []rivertype.Middleware{rivermw.New(locks)},
//	})
//
// A job whose key is busy is snoozed (river.JobSnooze): it goes back to the
// queue for a short jittered delay ([WithSnooze], default [DefaultSnooze])
// without using an attempt, and River counts the snooze in the job's
// metadata. With [WithWait] it first waits for the key in rlock's fair queue,
// holding one of its queue's workers meanwhile. A snoozed job comes back for
// as long as its key stays busy unless [WithMaxSnoozes] caps it; past the cap
// a busy attempt fails with an error matching [ErrBusy] and
// lockmw.ErrNotAcquired.
//
// The worker runs with the lock's hold context. When the lock is lost (it
// was force-unlocked, or renewals failed until it could have expired) that
// context is cancelled with cause lockmw.ErrLockLost and the attempt fails
// with an error matching lockmw.ErrLockLost, so River retries the job: the
// worker should stop when its context is done.
//
// # Snoozing without doInner
//
// River's documentation asks a worker middleware to always call doInner. A
// busy job does not: doInner is the job's run (the rest of the middleware
// stack, the WorkBegin and WorkEnd hooks, the decoding of the args, the job
// timeout and the worker), and a job that waits its turn must not run. The
// snooze River records comes from the returned error alone (its executor
// reads the river.JobSnooze error after the whole chain returns), so
// nothing River keeps is skipped; see docs/river.md.
//
// # Limits
//
// With [WithPermits](n), n > 1, at most n jobs with the same key run at once:
// each attempt takes one permit of a lockmw.Semaphore of n permits instead of
// the key's lock, and a job that finds no free permit is busy.
//
//	byTenant := func(_ context.Context, job *rivertype.JobRow) string {
//		return "export:" + tenantOf(job.EncodedArgs)
//	}
//	rivermw.New(locks, rivermw.WithKey(byTenant), rivermw.WithPermits(2))
//
// # Keys
//
// The lock of key K is the rlock lock named "river:lock:K", its semaphore
// (with a limit above 1) "river:limit:K" (see [WithKeyPrefix]). Because the
// locks are Redisson-compatible RLocks, and the semaphores
// RPermitExpirableSemaphores, a Java service using Redisson, an asynq task
// under asynqmw or an HTTP route under httpmw can take the same lock by
// name. River keeps its jobs in PostgreSQL; the locks live in the Redis of
// the lockmw.Client the middleware is given.
package rivermw
