// Package lockmw is a reentrant distributed lock on Redis, wire-compatible
// with Redisson's RLock, and the core of rlock.
//
// A lock is a Redis hash at key name whose field "<clientID>:<ownerID>" holds
// the reentrancy count, changed only by Lua scripts; Redisson clients and
// rlock clients exclude each other on the same name and wake each other's
// waiters through Redisson's channel redisson_lock__channel:{name}.
//
// # The context is the thread
//
// Redisson ties a hold to a Java thread. Go has no thread identity, so rlock
// ties it to a context: Lock returns a hold context, derived from the one
// passed in, that carries (client, owner, name). Pass it (or a context derived
// from it) to Lock on the same Client and name to re-enter, and to Unlock to
// release that level:
//
//	hctx, err := m.Lock(ctx)
//	if err != nil { return err }
//	defer m.Unlock(hctx)
//	doWork(hctx) // a nested m.Lock(hctx) re-enters instead of deadlocking
//
// Two Clients, even in one process, are two owners, like two Redisson
// instances. A context that carries no hold, such as context.Background(),
// never re-enters and cannot Unlock (ErrNotHeld).
//
// # Lifetimes
//
//	what happens                         the hold context              renewal            Unlock afterwards
//	the ctx passed to Lock is cancelled  cancelled, the caller's cause goes on until Unlock releases, returns nil
//	a leased hold reaches its lease end  deadline exceeded             none               ErrLockLost if gone or someone else's, else releases
//	the lock is lost (renewal finds it   cancelled, cause ErrLockLost  stops              ErrLockLost, nothing touched
//	  gone; renewals fail until the key
//	  could have expired; force unlock)
//	Client.Close                         cancelled, cause ErrClosed    stops              releases the lock if it is still there
//	the last Unlock                      cancelled                     stops              ErrNotHeld
//
// Unlock and UnlockAt work with a cancelled context: they take the owner from
// it and run the release detached, bounded by WithReleaseTimeout.
//
// # Watchdog, leases and losing a lock
//
// Lock, and TryLock with lease 0, give the key the watchdog timeout (30s by
// default) as TTL and renew it every third of that while held. TryLock with a
// lease sets that TTL and never renews. When a renewal finds the key gone or
// owned by someone else, the hold context is cancelled at once with cause
// ErrLockLost; when renewals fail (network, Redis down) it is cancelled no
// later than the send time of the last successful renewal plus the timeout,
// minus a margin of 1% + 2ms for clock drift. Redisson never tells its holder;
// rlock does, so work done under the lock can stop:
//
//	if errors.Is(context.Cause(hctx), lockmw.ErrLockLost) { ... }
//
// # Waiting
//
// A busy acquisition that may wait joins a queue of waiters kept in Redis
// beside the lock (rlock_queue:{name}, rlock_waiters:{name}; a name that has
// a brace already is not wrapped and gets a '~' after it, rlock_queue:name~,
// so that "k" and "{k}" never share a queue) and subscribes
// to the lock's channels; all waiters of one name in one Client share one
// subscription, and all names one connection (one per master on a Redis 7
// cluster, with SSUBSCRIBE). The last Unlock hands the lock
// straight to the first live waiter in the queue and tells only that waiter,
// on rlock_handoff:{name}:<clientID>; it publishes Redisson's "0" on Redisson's channel
// only when nobody is queued. So one unlock wakes one waiter across all
// processes, with no herd of failed attempts. Redisson's waiters know nothing
// of the queue, so while one waits (the release counts the subscribers of
// Redisson's channel that are not rlock clients) at most three hand-offs in
// a row go to rlock waiters: the next release (or one with nobody queued)
// frees the lock, publishes "0" and reserves it for Redisson's woken threads
// (rlock's callers that would wait are told it is busy) until one of them has
// held it, or at most for 8 round trips of the releasing Client (20ms to 1s);
// then rlock's waiters may take it. A lock handed over gets only a
// claim window (a tenth of the waiter's TTL, at least 200ms) until the
// waiter's client claims it with its full TTL (in the background for a
// watchdog hold, once a third of the window has passed and only if it is
// still held, its context ending if the claim fails; before Lock returns
// for a leased one), so a waiter that died just before its turn blocks the
// name for that window only, and a short hold costs no claim. A waiter also retries when Redisson's "0"
// arrives, when the holder's TTL runs out, and at least every third of its own
// TTL (which keeps its queue entry alive); queue entries of waiters that died
// expire.
//
// # Semaphores
//
// [Client.Semaphore] limits a name to at most N holders at once across
// every process: Redisson's RPermitExpirableSemaphore (the count at name,
// the permits in the sorted set {name}:timeout scored by expiry, the count
// published on redisson_sc:{name}), waiting in the same queue with the same
// hand-off, its permits renewed by the same watchdog and lost the same way.
// Beside Redisson's waiters it reserves a permit for them as the mutex
// reserves its lock: rlock's callers that would wait leave the last free
// permit alone until a Redisson thread has taken a permit, or for the same
// window at most. A permit is not reentrant. See docs/semaphores.md.
//
// # Multi-locks
//
// [Client.MultiLock] holds several Lockers (of any Clients) all at once or
// none: Redisson's getMultiLock. It takes its members one at a time in one
// order and never waits while it holds one, so multi-locks over
// overlapping sets never deadlock; its hold context ends when any member's
// does. See docs/multilock.md.
//
// # Read-write locks
//
// [Client.RWMutex] lets many readers or one writer hold a name: Redisson's
// RReadWriteLock on the wire, with the mutex's waiting, renewal and
// lost-lock signal. Both sides are reentrant, the writer may take the read
// side (and keep it after its Unlock), a reader's Lock returns [ErrUpgrade].
// A reader waits behind a writer queued before it, and a release hands the
// lock to a writer alone or to a batch of readers, so that among rlock
// clients neither side starves. See docs/rwmutex.md.
//
// # Leadership
//
// [Lead] campaigns for a mutex and runs a function while the caller leads:
// one instance leads, the others stand by in the queue and take over at
// once when the leader steps down, or within the watchdog timeout plus one
// renewal interval when it dies. The function's context ends when
// leadership is lost (ErrLockLost); Lead then campaigns again.
// [Mutex.Holder] tells an observer who leads, with the leader's hook
// metadata.
//
// # Fencing
//
// With WithFencing each new hold takes a token from INCR
// redisson_lock_token:{name} inside the acquire script; Token reads it from the
// hold context without a round trip. The counter expires a day after its last
// token; a new one starts from the server's clock in microseconds, so tokens
// are large and strictly increasing per name, not consecutive. Pass it to the resource you protect and
// have it reject writes with a token lower than one it has seen: a paused or
// partitioned holder may still believe it holds the lock after it expired.
//
// # Retries
//
// go-redis re-sends a command after a read timeout. A re-sent acquire cannot
// count twice (its owner field is new, so finding it means it already won), a
// re-sent re-entry or unlock finds the result of the first in a short-lived
// latch key (redisson_unlock_latch:{name}:<requestID>), as Redisson does.
//
// # Deadlines
//
// Every call that takes a context returns within its deadline (plus
// scheduling) on a paused or unreachable server, whatever the go-redis
// client's options: with ContextTimeoutEnabled false (the default) go-redis
// waits for its ReadTimeout (5 s) whatever the context says, so a call whose
// context has a deadline sends its round trips from a goroutine of its own
// and returns at the context's end; a context without a deadline costs
// nothing, and one that can only be cancelled is left to go-redis (a round
// trip then ends at its read timeout at worst; WithAcquireContext gives up at
// once whatever the context). Unlock and UnlockAt return within the
// release timeout (WithReleaseTimeout, 10 s); one longer than the client's
// read timeout needs no goroutine: the release runs on the caller's
// goroutine with a deadline one read timeout earlier, so that the last
// attempt go-redis makes ends in time. A call given up on leaves its command
// on the wire: its goroutine and a pooled connection stay busy until the reply
// or the read timeout, and an acquisition or re-entry that took effect late is
// undone as soon as its reply arrives. A ForceUnlock given up on may still
// run when the server answers again.
//
// # Options
//
// Three kinds of options configure three things, and each kind has one rule
// for a value that can never be right, set by when the value is known:
//
//   - An [Option] configures a [Client] ([New], [NewQuorum]): the program's
//     configuration, given once at start-up. New applies the options in
//     order, then checks the result once: an invalid value or a nil Option
//     panics with one line that names the option and the value
//     ("lockmw: WithReleaseTimeout(0s): must be positive").
//   - A [LockOption] configures a handle ([Client.Mutex], [Client.Semaphore]),
//     made per request and often from request data: a nil LockOption is
//     skipped, a name or a number of permits that cannot be used gives a
//     handle whose every call returns the error (see [Mutex.Err]), and only
//     a combination that can never be right panics: [WithFencing] on a
//     semaphore.
//   - A [CallOption] configures one call of [WithLock] or [Do], or every
//     call of a function made by [Wrap]: its values arrive at call time, so
//     an invalid one (a negative [WithWait], a nil [WithAcquireContext])
//     makes the call return an error matching [ErrInvalidArgument] without
//     running fn; a nil CallOption is skipped, and so is a nil callback
//     given to [WithOnAcquire] or [WithOnRelease]. A [LeadOption], given to
//     one call of [Lead], follows the same rule.
//
// An option's name means the same in every package of rlock: WithWait is
// how long a call waits for a busy lock (0 makes a single attempt, [Forever]
// waits until the caller's context ends), WithLease the lease that replaces
// the watchdog, WithPermits a semaphore of n permits instead of a mutex.
// Where the packages' defaults differ, each exports its own: the default of
// WithWait is each package's DefaultWait ([DefaultWait] here, Forever;
// httpmw's 10s; asynqmw's 0).
//
// # Topologies
//
// New takes any go-redis client: a single node, a failover (Sentinel) client
// or a cluster client. On a cluster every key of a lock shares the name's hash
// slot, waiters use sharded pub/sub on Redis 7 (one connection per node),
// renewals go per slot, pipelined per node, and waiters ride out a moved slot
// or a fail-over. WithReplicaSync waits for replicas to acknowledge each
// acquisition. NewQuorum spreads each lock over independent masters
// (Redlock), with fencing tokens that stay increasing across majorities.
// Replication is asynchronous on every topology with replicas: a fail-over can
// lose a lock, and its holder then learns it at its next renewal. Only fencing
// tokens protect the resource in that window.
//
// # Cost
//
// An uncontended Lock is one RESTORE of a ready-made lock hash (BUSYKEY
// when the lock exists) and its Unlock one EVALSHA of a short release script,
// which frees a lock counted once with nobody queued. When it finds waiters
// it changes nothing and the release script hands the lock over: one more
// round trip, once. After a busy lock or a queued waiter on a name the Client
// takes and frees that name with the acquire and release scripts for 10
// seconds; the acquire script names the holder and queues a waiter in the
// same round trip. Each Client first checks, once, on a key of its own
// ("rlock_probe:{<nonce>}"), that the server makes a hash of the payload: the
// hash as a listpack (RDB 10, which Redis 7 and later copy as they keep it),
// else as plain fields (RDB 9, Redis 5 and 6); a server that refuses RESTORE
// (ACL) or stores something else keeps the Client on the scripts. Fenced mutexes and quorum clients always use the scripts.
//
// A Client runs one watchdog goroutine, which renews all its locks in
// scripts of at most 100 locks sent in one pipeline, and one goroutine per
// subscription connection.
//
// # Batching
//
// On a single Redis (a *redis.Client, Sentinel's failover client too) and on
// each master of a cluster (a *redis.ClusterClient) the round trips of a
// Client's Lock, TryLock and Unlock calls (a mutex's or a semaphore's) that
// overlap share pipelines: a call that finds none of them under way is sent at once, on
// its own goroutine, as without batching; the calls that come meanwhile are
// queued and sent together, by a goroutine that lives while calls keep
// coming, as a second round trip beside the first or when a round trip
// returns. A service that takes
// many independent locks at once pays one round trip, one connection and
// one system call each way for many of them, and its Unlocks one run of the
// release script. Each call keeps its own deadline:
// a queued call whose context ends is taken out unsent, and one whose
// pipeline is under way returns then (what it did is undone as for a lost
// reply). The go-redis hooks see a batch through ProcessPipelineHook, on a
// context with the values of its first caller's. A round trip that hangs
// holds up the calls queued behind it until their contexts end (or the
// client's read timeout). On a cluster each master has a queue of its own,
// its pipelines go through the ClusterClient (its hooks see them; go-redis
// follows MOVED and ASK for each command in them), and short releases merge
// only within one hash slot. [WithoutBatching] turns it off; a quorum never
// batches.
package lockmw
