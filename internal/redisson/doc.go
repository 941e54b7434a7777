// Package redisson speaks Redisson's RLock, RReadWriteLock and
// RPermitExpirableSemaphore protocols from Go, for rlock's tests and load tool: a Java service's lock
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
//     "0" and its acquire. [WithNodeWake] makes node-redisson 1.0.4's waiter:
//     a subscription per thread, every waiting thread woken by any message,
//     and an unsubscription, confirmed, before it tries again.
//   - [Client.GetPermitExpirableSemaphore] is the process's
//     RPermitExpirableSemaphore, one permit at a time: [Semaphore.Acquire]
//     and [Semaphore.TryAcquire] wait as Redisson waits (retry on a message
//     or when the earliest lease runs out), [Semaphore.Release],
//     [Semaphore.TrySetPermits] and [Semaphore.AvailablePermits] run
//     Redisson's scripts. Its wire protocol is summed up below.
//   - [Client.GetReadWriteLock] is the process's RReadWriteLock: its
//     [ReadWriteLock.ReadLock] and [ReadWriteLock.WriteLock] take Lock,
//     TryLock and Unlock with a thread id as [Lock] does, wait as it does
//     on their shared channel, and a hold taken without a lease is renewed
//     by the Client's watchdog ([WithWatchdogTimeout]). Its wire protocol
//     is summed up below.
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
// The read-write lock follows the same release (read at master
// 66863978, 4.7.0 plus 62 commits, whose read-write files match the tag's),
// which matches every release from 3.44.0 (where the watchdog became
// renewal.LockRenewalScheduler and an unlock of an absent read-write lock
// began to answer nil instead of 1) on; the key layout, channel and
// messages are older (2.x). Files read, besides the above:
//
//   - RedissonReadWriteLock.java: readLock() and writeLock() make new
//     handles on one name: [ReadWriteLock].
//   - RedissonReadLock.java: the channel prefixName("redisson_rwlock",
//     name), the writer's field getLockName + ":write", the timeout prefix
//     suffixName(name, getLockName) + ":rwlock_timeout", getKeyPrefix, the
//     scripts of tryLockInnerAsync and unlockInnerAsync, and
//     scheduleExpirationRenewal / cancelExpirationRenewal: [ReadLock].
//   - RedissonWriteLock.java: getLockName, the scripts of tryLockInnerAsync
//     and unlockInnerAsync (which publish READ_UNLOCK_MESSAGE): [WriteLock].
//   - RedissonLock.java and RedissonBaseLock.java again: tryAcquireAsync
//     (a lease > 0 becomes the handle's internalLockLeaseTime, none starts
//     the renewal), cancelExpirationRenewal (the lease goes back to the
//     watchdog timeout when the unlock answered nil or 1) and
//     unlockAsync0: the wait loops and the unlock are shared with [Lock].
//   - pubsub/LockPubSub.java: "0" releases one latch permit, "1" releases
//     getQueueLength() permits, one per thread blocked on the latch.
//   - renewal/LockRenewalScheduler.java, RenewalTask.java, LockTask.java,
//     ReadLockTask.java, LockEntry.java, ReadLockEntry.java and
//     client/protocol/decoder/ContainsDecoder.java: the watchdog, one task
//     per kind that runs every lockWatchdogTimeout/3 while it has holds,
//     counting each thread's acquisitions, and its two scripts.
//
// What is left out: the watchdog of [Lock] (a lease ≤ 0 takes the watchdog
// timeout, 30 s, as Redisson does, but is never renewed: the tests and the
// load tool hold for milliseconds), the async API and its listeners,
// WAIT for replicas (evalWriteSyncedNoRetryAsync). Sharded pub/sub on a
// Redis 7 cluster is [NewShardedClient]. Redisson shares a subscription
// connection among several channels; here each entry has its own, which
// changes no message a thread sees. Redisson unsubscribes after a thread's
// wait in the background; here Lock and TryLock return once the entry's
// connection is closed, which takes no round trip.
//
// Left out of the read-write lock: forceUnlock, isLocked, getHoldCount,
// the async API, WAIT for replicas (syncedEval…, handleNoSync) and the
// subscription timeout of lock (pubSub.timeout: here ctx bounds it).
// Redisson's watchdog renews up to lockWatchdogBatchSize (100) names per
// script run, grouped by slot on a cluster; here each name has its own run
// of the same script, which renews the same keys.
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
//
// # Wire summary of the read-write lock
//
// For a name without "{" (with one, the braces are left out below; every
// key then shares name's slot only if name has a whole hash tag):
//
//   - name: a hash. Field "mode": "read" or "write". A reader's field
//     "<id>:<threadId>" holds its hold count; the writer's field
//     "<id>:<threadId>:write" holds its own. A writer's thread may hold a
//     reader field beside it; no other field is ever there, and the scripts
//     walk every field (HKEYS, HLEN), so none may be added.
//   - {name}:<id>:<threadId>:rwlock_timeout:<n>: a string "1" per level n
//     of a reader's hold, with that level's lease as its TTL; the read
//     unlock deletes the top level's.
//   - redisson_rwlock:{name}: the channel of both sides. A read unlock that
//     deletes the hash publishes "0" (wakes one waiting thread per
//     process); a write unlock that deletes it publishes "1" (wakes every
//     thread of each process blocked on the latch then). An unlock of an
//     absent hash publishes its message too and fails.
//   - redisson_unlock_latch:{name}:<requestId>: the unlock's answer, kept
//     for a retry, deleted after the unlock.
//   - Read acquire: when no mode, mode read, the reader field at 1, level
//     1's key, the lease on both. When read, or write held by this thread's
//     writer field: one more level (HINCRBY), its key with the lease, and
//     the hash's TTL raised to the lease if below. Else the hash's pttl.
//   - Write acquire: when no mode, mode write, the field at 1, the lease.
//     When write and the field is this thread's: one more level and the
//     TTL becomes TTL left + lease. Else the hash's pttl (a reader does not
//     upgrade: its own write waits for ever).
//   - Read unlock: one level off; when fields other than mode remain, the
//     hash's TTL becomes the longest pttl among all readers' level keys
//     and the unlock ends, or, none being alive, ends if a writer holds;
//     else the hash is deleted and "0" published.
//   - Write unlock: one level off, the TTL set to the handle's lease when
//     levels remain; the last level removes the field, and either deletes
//     the hash and publishes "1" (nothing else left) or sets mode read with
//     no message (the writer's own read levels are left): readers of other
//     threads waiting then wake when that last reader unlocks, or when the
//     TTL they were answered runs out.
//   - Watchdog, every watchdog/3: a writer's hash gets the watchdog timeout
//     as TTL while its field is there; a reader's hash and every level key
//     of each renewed reader field still there get it too.
//
// What a non-Redisson client must do to share the lock with Redisson:
//
//   - Keep the hash to Redisson's fields (mode, reader and writer fields
//     with integer counts): metadata of its own goes in side keys. A reader
//     field needs one timeout key per level, each with a TTL, else a
//     Redisson read unlock sees no live reader and deletes the hash under
//     it (or keeps the hash alive no longer than those keys).
//   - Keep each level key's TTL alive while it holds (as the read renewal
//     does) and the hash's TTL no shorter than the longest of them.
//   - Publish on redisson_rwlock:{name}, with the command Redisson's
//     clients use: "0" when a read release deletes the hash, "1" when a
//     write release deletes it; a Redisson waiter wakes on nothing else
//     but its answered TTL. "1" wakes all of a process's blocked waiters,
//     "0" one: publish "1" where several Redisson readers may now enter.
//   - Answer the hash's pttl to waiters' acquire attempts: Redisson's
//     waiters sleep on it; use no TTL-less hash (pttl -1 makes them wait
//     for a message only).
package redisson
