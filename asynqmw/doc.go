// Package asynqmw is asynq (github.com/hibiken/asynq) middleware, built on
// rlock's lock, that runs tasks with the same key one at a time (or at most n
// at a time) across all workers and servers, and optionally skips a task
// whose key has just been processed.
//
// asynq's Unique option de-duplicates at enqueue time only: it refuses a
// second task while the first is queued, and its key is not released when the
// task is retried or archived. This middleware works at execution time
// instead: every attempt of a task takes the lock of the task's key
// (by default its type and a hash of its payload) for as long as the handler
// runs, so identical tasks enqueued together never overlap, wherever they
// run.
//
//	c := lockmw.New(rdb)
//	defer c.Close()
//	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
//		// Busy attempts are retried without using up the task's retries...
//		IsFailure: func(err error) bool { return !asynqmw.IsBusy(err) },
//		// ...and soon, instead of after asynq's failure back-off.
//		RetryDelayFunc: asynqmw.RetryDelay(time.Second, nil),
//	})
//	mux := asynq.NewServeMux()
//	mux.Use(asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute)))
//
// A task whose key is busy is retried later ([Retry], the default) or dropped
// ([Skip]); with [WithWait] (default [DefaultWait], 0: no wait) it first
// waits for the key, in rlock's fair queue. With [WithDedupWindow] a successful run leaves a mark, and tasks with
// the same key that get the lock while the mark lives return nil without
// running: "don't process the same task twice". [WithOnSkip] is told of
// each task skipped so, as a duplicate ([ErrDuplicate]) or busy ([ErrBusy]),
// and the lockmw.Client's Skip hooks count them (otelhooks' lock.skips).
//
// The handler runs with the lock's hold context. When the lock is lost (it
// was force-unlocked, or renewals failed until it could have expired) that
// context is cancelled with cause lockmw.ErrLockLost and the attempt fails
// with an error matching lockmw.ErrLockLost, so asynq retries the task: the
// handler should stop when its context is done.
//
// # Limits
//
// With [WithPermits](n), n > 1, at most n tasks with the same key run at once:
// each attempt takes one permit of a lockmw.Semaphore of n permits instead of
// the key's lock. A task that finds no free permit is busy, and follows
// [WithWait] and [WithOnBusy] as a task whose key is locked does:
//
//	byTenant := func(_ context.Context, t *asynq.Task) string { return "export:" + tenantOf(t) }
//	mux.Use(asynqmw.New(c, asynqmw.WithKey(byTenant), asynqmw.WithPermits(2)))
//
// A limit does not combine with a dedup window (New panics): tasks of one
// key run side by side, so a duplicate could start before the first one has
// left its mark.
//
// # One scheduler at a time
//
// [RunScheduler] runs an asynq.Scheduler only on the instance that leads a
// lockmw.Mutex ([lockmw.Lead]), so that periodic tasks are enqueued once,
// not once per instance; a standby takes over when the leader goes.
//
// # Keys
//
// The lock of key K is the rlock lock named "asynq:lock:K", its semaphore
// (with a limit above 1) the rlock semaphore named "asynq:limit:K", and its
// dedup mark the string key "asynq:done:K" (see [WithKeyPrefix]). A limit of
// 1 is the lock, under the same name as without [WithPermits], so servers
// running older versions of this package and newer ones exclude each other.
// The semaphore's name is never a lock's: while servers with a limit of 1 and
// servers with a limit of n > 1 run side by side (a deploy that changes the
// limit), they do not limit each other (up to 1+n tasks of a key may run),
// but neither ever finds a key of the wrong type.
// Because the locks are Redisson-compatible RLocks, and the semaphores
// RPermitExpirableSemaphores, a Java service using Redisson can take the same
// lock or permit by name. The middleware may share asynq's Redis or use
// another one: it uses only the lockmw.Client it is given.
package asynqmw
