// Package redisson speaks Redisson's RLock and RPermitExpirableSemaphore
// protocols from Go, for rlock's tests and load tool: a Java service's lock
// or semaphore, played on the wire, to check that rlock and Redisson exclude
// and wake each other, and to measure what Redisson's own scripts cost
// beside rlock's.
//
// Two levels are offered:
//
//   - [TryAcquire] and [Unlock] run Redisson's acquire and unlock scripts
//     once, for a test that drives the protocol step by step.
//   - [Client] is a whole Redisson process (a RedissonClient): one id, and
//     one subscription per lock name shared by its threads, whose every "0"
//     message wakes one waiting thread. Its [Lock] (RLock) waits as Redisson
//     waits: retry on "0" or when the holder's TTL runs out, nothing else.
//     [WithSlowWake] makes a slower waiter: one more round trip between the
//     "0" and its acquire (the delay of node-redisson, which unsubscribes
//     before it retries).
//   - [Client.GetPermitExpirableSemaphore] is the process's
//     RPermitExpirableSemaphore, one permit at a time: [Semaphore.Acquire]
//     and [Semaphore.TryAcquire] wait as Redisson waits (retry on a message
//     or when the earliest lease runs out), [Semaphore.Release],
//     [Semaphore.TrySetPermits] and [Semaphore.AvailablePermits] run
//     Redisson's scripts. Its wire protocol is summed up below.
//
// # Source followed
//
// Redisson 4.7.0 (tag redisson-4.7.0, unchanged on master at 4.7.1-SNAPSHOT),
// files under redisson/src/main/java/org/redisson/, read and rewritten in Go
// (not copied):
//
//   - RedissonLock.java: the acquire script (tryLockInnerAsync), the unlock
//     script (unlockInnerAsync), lock(leaseTime, unit, interruptibly) and
//     tryLock(waitTime, leaseTime, unit): [Lock.Lock] and [Lock.TryLock].
//   - RedissonBaseLock.java: the hash field "<id>:<threadId>" (getLockName),
//     the entry name "<id>:<name>" (getEntryName), the unlock latch key
//     "redisson_unlock_latch:{name}:<requestId>" deleted after the unlock
//     (unlockInnerAsync(threadId, requestId)): [Lock.Unlock].
//   - pubsub/PublishSubscribe.java: one entry per entry name, counted by the
//     threads that subscribed, subscribed to the channel once and
//     unsubscribed when the last thread leaves: [Client] and its entries.
//   - pubsub/LockPubSub.java and RedissonLockEntry.java: the entry's latch,
//     a semaphore that starts at 0 permits; each "0" on the channel releases
//     one permit, so it wakes one waiting thread, or is kept for the next
//     thread that waits: latch.
//   - RedissonPermitExpirableSemaphore.java: the names (timeoutName =
//     suffixName(name, "timeout"), channelName = prefixName("redisson_sc",
//     name)), nonExpirableTimeout, calcTimeout, generateId (16 random bytes
//     in hex, sent as the raw bytes), the scripts of tryAcquireAsync(ids,
//     timeoutDate), tryReleaseAsync(permitId), availablePermitsAsync and
//     trySetPermitsAsync, and the loops of acquire(permits, leaseTime, unit)
//     and tryAcquire(permits, waitTime, leaseTime, unit): [Semaphore].
//   - pubsub/SemaphorePubSub.java with RedissonLockEntry.java and
//     PublishSubscribe.java: one entry per semaphore name, counted by the
//     threads that subscribed; each message, read as a Long n, releases
//     min(threads counted, n) latch permits: Client.semaphoreMessage.
//     PublishSubscribe decodes messages with LongCodec, so a message that
//     is not a number never reaches onMessage.
//
// What is left out: the watchdog (a lease ≤ 0 takes the watchdog timeout,
// 30 s, as Redisson does, but is never renewed: the tests and the load tool
// hold for milliseconds), the async API, the read/write lock's "1" message,
// WAIT for replicas (evalWriteSyncedNoRetryAsync). Sharded pub/sub on a
// Redis 7 cluster is [NewShardedClient]. Redisson shares a subscription
// connection among several channels; here each entry has its own, which
// changes no message a thread sees. Redisson unsubscribes after a thread's
// wait in the background; here Lock and TryLock return once the entry's
// connection is closed, which takes no round trip.
//
// Left out of the semaphore: several permits per call (the scripts take a
// list; here one id is sent), setPermits, addPermits, updateLeaseTime,
// getLeaseTime, getPermits, acquiredPermits, tryRelease of a list, delete and
// expire, the async API and its listeners (tryRunListener), WAIT for
// replicas (syncedEval…) and the release of ids taken by a call whose reply
// was lost (handleNoSync), and the subscription timeout of acquire
// (semaphorePubSub.timeout: here ctx bounds it). Where TryAcquire fails to
// subscribe for another reason than its wait time, it returns the error;
// Redisson logs it and returns null. Elapsed time is measured on Go's
// monotonic clock (Redisson: currentTimeMillis); scores and "now" use the
// wall clock in milliseconds, as Redisson's do.
//
// # Wire summary of the semaphore
//
// For a semaphore name without "{" (with one, the name is used as is:
// "name:timeout", "redisson_sc:name", and the three share a slot only if
// name has a whole hash tag; without, they always do):
//
//   - name: a string key, the count of free permits (GET, SET, INCRBY,
//     DECRBY). Absent until trySetPermits sets it (SET only when absent);
//     while absent, every acquire fails and its thread waits.
//   - {name}:timeout: a zset of the permits taken. Member: the permit id's
//     16 bytes, raw (the id a caller sees is their 32 lowercase hex digits;
//     release hex-decodes it). Score: the permit's expiry in milliseconds
//     since the epoch, by the acquiring client's clock,
//     currentTimeMillis() + lease, or 922337203685477 ([NoLeaseScore]) for
//     no lease. Acquire ZADDs and, when name has a TTL, PEXPIREs the zset to
//     it; release ZREMs.
//   - redisson_sc:{name}: the channel, PUBLISH, or SPUBLISH with sharded
//     pub/sub; the script publishes, the channel being its KEYS[3] or
//     KEYS[2]. Every message is a decimal integer, the count of free
//     permits after the change, never "1 per permit": trySetPermits
//     publishes the permits it set; release publishes the count after its
//     INCRBY 1, always (even 0 or below); reclaiming expired permits
//     publishes the count after its INCRBY when it is above 0.
//   - Clock: every score and every "now" is the client's wall clock in
//     milliseconds (System.currentTimeMillis()); Redis' clock is not used.
//     A permit is expired when its score ≤ the now of the script that
//     looks. Clients whose clocks differ reclaim each other's permits early
//     or late by the difference.
//   - Reclaim: the acquire script (for at most the permits it wants), the
//     availablePermits script and others take the permits with score in
//     [0, now] out of the zset, INCRBY the count by their number, and
//     publish the new count when above 0.
//   - Acquire: reclaim, then when count ≥ 1, DECRBY 1 and ZADD, answer
//     "OK"; else answer ":<score>" (the zset's lowest score, as Redis
//     prints it, parsed by Java's Long.parseLong) unless that score is
//     922337203685477, else nil.
//   - A waiting thread tries once; if it failed it subscribes, then loops:
//     try; wait on its process's latch until the answered score (score −
//     now, not below 0; with a wait time, at most the time left), or with
//     no bound on nil. Each message n on the channel adds min(n, threads of
//     the process subscribed to this semaphore) latch permits; one wakes
//     one thread, which tries once; a permit nobody takes stays for the next
//     wait while the process is subscribed. A message that is no integer,
//     or n ≤ 0, wakes nobody.
//
// What a non-Redisson client must do to keep Redisson's waiters correct:
//
//   - Store the count in name as an integer string and the permits in
//     {name}:timeout with integer millisecond scores by the wall clock
//     (a fractional score first in the zset makes a Redisson waiter's
//     Long.parseLong throw), and no-lease permits at 922337203685477 (any
//     other score is answered to waiters as an expiry to sleep until). Use
//     16-byte members if Redisson is ever to release the permit by id.
//   - Publish, in the script that frees permits, the count of free permits
//     it leaves (not the number freed: a "1" while three are free wakes one
//     thread per process), with the command Redisson's clients use (PUBLISH,
//     or SPUBLISH on a cluster with sharded pub/sub): on release, on
//     reclaiming expired permits, and on creating the count. A Redisson
//     thread waiting while only no-lease permits are held wakes on nothing
//     else.
//   - Create the count with trySetPermits' script (SET only when absent,
//     then publish it) before anyone acquires: a Redisson acquire on an
//     absent count waits, and wakes only on a message.
//   - Give leased permits their expiry as the score: Redisson waiters sleep
//     until the lowest score and reclaim it themselves, with no message.
package redisson
