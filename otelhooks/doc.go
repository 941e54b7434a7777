// Package otelhooks traces and measures rlock locks with OpenTelemetry: how
// long a request waited for a lock, for whom, and how long it held it.
//
//	c := lockmw.New(rdb, lockmw.WithHooks(otelhooks.New()))
//
// [New] fills a [lockmw.Hooks]; lockmw itself never imports OpenTelemetry.
// The hooks use the global tracer and meter providers unless
// [WithTracerProvider] and [WithMeterProvider] say otherwise, under the
// instrumentation scope [ScopeName].
//
// # Spans
//
// All spans are of kind INTERNAL. A permit of a [lockmw.Semaphore] is traced
// as a lock: its lock.wait and lock.hold spans are a mutex's, told apart by
// lock.kind ("mutex" or "semaphore"), and a semaphore's carry lock.permits,
// its limit (the permits its Client asked for; absent for a mutex). Each
// side of a [lockmw.RWMutex] is traced as a lock of lock.kind "rwmutex" with
// lock.mode "read" or "write". A
// [lockmw.MultiLock] is traced as a lock of lock.kind "multilock" named
// "multi(<members>)": its lock.wait and lock.hold spans sit beside its
// members' own (all children of the caller's span), and work under it is a
// child of its lock.hold span. Spans
// carry the full lock name in lock.name, and the lock's group
// ([lockmw.WithGroup]) in lock.group when it has one: httpmw's locks have
// their route, asynqmw's their task type. The spans (and links) of a lock an
// adapter took carry lock.adapter ([lockmw.LockInfo.Adapter]: "http",
// "grpc", "connect", "asynq", "river" or "gocron"); a lock of the program's
// own has none.
//
//   - lock.wait runs from the start of Lock or TryLock to acquired, timed out,
//     canceled or failed, as a child of the caller's span. Attributes:
//     lock.name, lock.group, lock.kind, lock.permits for a semaphore,
//     lock.mode for a read-write lock, lock.outcome ("acquired", "timeout", "canceled", "error"),
//     lock.reentrant, lock.lead on a campaign of [lockmw.Lead], lock.waited,
//     lock.fencing_token when acquired on a fenced mutex, and when the lock
//     was busy lock.holder (the holder's "<clientID>:<ownerID>", the last one
//     seen). When the lock was busy the span carries a link to the holder's
//     lock.hold span, even when the holder is another process: see below.
//     Status Error only for outcome "error".
//   - lock.hold runs from the acquisition to the final Unlock, the loss of the
//     lock or Client.Close, as a child of the caller's span. The hold context
//     that Lock returns carries it, so spans started from that context (work
//     done under the lock) are its children. Attributes: lock.name,
//     lock.group, lock.kind, lock.permits for a semaphore, lock.mode for a
//     read-write lock, lock.lead on a term
//     of [lockmw.Lead], lock.waited, lock.lost, lock.fencing_token when
//     fenced, lock.lease when leased, lock.closed when abandoned by Close.
//     When the lock is lost the status is Error and lock.lost is true.
//   - lock.renew is one short span per renewal script of the watchdog, a root
//     span linked to the lock.hold span of every lock it renewed (one script
//     renews up to 100 locks, so 10,000 held locks make 100 spans per renewal
//     interval, not 10,000). Attributes: lock.outcome ("renewed", "lost" when
//     any lock was gone, "error" when the script failed), lock.count,
//     lock.renewed_count, lock.lost_count, lock.failed_count; each link has
//     lock.name, lock.group, lock.kind, lock.permits for a semaphore and
//     lock.outcome. One script renews mutexes and permits together, so the
//     span itself has no lock.kind.
//
// # Who waited for whom
//
// When a hold begins, the hooks store its lock.hold span context with the
// lock in Redis, as a W3C traceparent in the lock hash's "rlock:meta" field
// (Redisson ignores fields that are not owner fields, so Redisson clients
// still share the lock). A waiter that finds the lock busy reads it back with
// the same busy reply that tells it to wait, with no extra round trip, and its
// lock.wait span links to the holder's lock.hold span: the holder it saw
// last. A queued waiter is handed the lock without seeing the holders before
// it in the queue, so after several holders it links to the one it found when
// it last tried. The field is written in the background right
// after the acquisition (one more script per hold; [WithHolderLinks] turns it
// off), so a waiter that arrives within a round trip of it may find no link.
// A semaphore's permits have no hash to keep it in, so a wait for a permit
// has no link.
//
// # Leadership
//
// A term of [lockmw.Lead] is a lock.hold span with lock.lead = true, from
// winning the campaign to stepping down or losing the lock; its campaign is
// a lock.wait span with lock.lead = true. The hand-over from one leader to
// the next is the standby's lock.wait link to the leader's lock.hold (as
// above): a timeline of who led when, and who took over from whom, can be
// drawn from the spans alone. As for any waiter, a standby links to the
// leader it found when it last tried: with several standbys queued, the
// second in line links to the term it found, not always to the one it took
// over from. Locks taken with the term's context inside the leader's work
// are not marked.
//
// # Metrics
//
//	name                instrument      unit        attributes
//	lock.wait.duration  histogram       s           lock.name, lock.kind, lock.permits, lock.mode, lock.outcome, lock.reentrant
//	lock.hold.duration  histogram       s           lock.name, lock.kind, lock.permits, lock.mode
//	lock.renewals       counter         {renewal}   lock.name, lock.kind, lock.permits, lock.mode, lock.outcome
//	lock.lost           counter         {lock}      lock.name, lock.kind, lock.permits, lock.mode
//	lock.skips          counter         {skip}      reason, lock.adapter, lock.name, lock.kind, lock.permits, lock.mode
//	lock.hold.active    up-down counter {hold}      lock.kind
//	lock.wait.active    up-down counter {waiter}    lock.kind
//	lock.renew.active   up-down counter {hold}      lock.kind
//
// lock.wait.duration records every acquisition, from the start of Lock or
// TryLock to its outcome (lock.outcome "acquired", "timeout", "canceled",
// "error"); lock.hold.duration every hold that ended (released, lost or
// abandoned by Close). lock.renewals counts one per lock per renewal script
// (lock.outcome "renewed", "lost", "error"), lock.lost the holds that ended
// without their owner releasing them. lock.permits is on a semaphore's data
// points only, lock.mode ("read" or "write") on a read-write lock's. Each
// of them, lock.skips too, has lock.adapter when an adapter took the lock.
//
// lock.skips counts the work an adapter did not run (a request, an RPC, a
// task, a job's run), which it reports with [lockmw.Client.ReportSkip]:
// reason "busy" (the lock stayed busy for the whole wait),
// "duplicate" (asynqmw: the lock was held and the task found done already,
// which no lock event shows), "refused" (the lock could not be applied: no
// key, an invalid name) or "error" (Redis failed, the Client was closed).
// Both reason and lock.adapter are closed sets, and the lock's
// attributes follow the name policy below, so the series stay bounded; a
// skip that names no lock (a misplaced mounting, a key function's error)
// has reason and lock.adapter alone. Each skip also adds a
// lock.skip event ([SkipEventName]) to the caller's span when it records,
// with the full lock name.
//
// The three up-down counters are gauges of a Client's state now:
// lock.hold.active the holds open (+1 when a hold begins, -1 when it ends;
// re-entries are no new hold), lock.wait.active the acquisitions under way
// (from the start of Lock or TryLock to its outcome, queued or trying;
// re-entries excluded), lock.renew.active the open holds the watchdog
// renews (those held without a lease; a multi-lock's members, never the
// multi-lock itself). Their only attribute is lock.kind: no lock name, so
// their series stay one per kind, and no client ID, for a
// Client's ID is random by default and a restarted process would start new
// series; the resource (service.instance.id) tells processes apart. Hooks
// shared by several Clients of one process count them together. They are
// named as OpenTelemetry's semantic conventions name such gauges
// (http.server.active_requests, db.client.connection.count): in the
// namespace of what they count (lock.hold, lock.wait, lock.renew, as the
// spans), not pluralized.
//
// The metrics' lock.name is the lock's group ([lockmw.WithGroup]) when it
// has one, else its name; [WithLockNameFunc] maps that value and
// [WithLockNameAttribute](false) drops it. The adapters whose lock names
// are per entity give their locks a bounded group: httpmw the name without
// the path values (the route, "http:POST /orders/{id}"), asynqmw the task
// type ("asynq:lock:email:send"), so 10,000 orders or payloads make one
// series, not one each. Names a program chose itself (scheduler's job names, a
// Mutex of its own) are counted by name: the program's code bounds them.
// Give a per-entity lock of your own a group. A multi-lock's group is
// "multi(<each member's group, or name>)" when any member has a group, so
// a multi-lock over per-entity members with groups is one series too.
// lock.kind ("mutex", "semaphore", "rwmutex" or "multilock") is always
// there, lock.permits (a semaphore's limit) on a semaphore's data points
// only, and lock.mode ("read" or "write") on a read-write lock's: they come
// from the program's code, not
// its data, so they add a few series at most (a name is one kind, with the
// limit its Clients set), never one per client or holder.
//
// # Cost
//
// Hooks run on the goroutine of the event. With a recording SDK, Lock and
// Unlock start and end two spans, record two histogram values and add to
// the up-down counters six times, a few microseconds of CPU beside two
// Redis round trips (BenchmarkHooks, BenchmarkLockUnlock); holder links add
// one background script per hold. Without hooks lockmw calls nothing.
package otelhooks
