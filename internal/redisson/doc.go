// Package redisson speaks Redisson's RLock protocol from Go, for rlock's
// tests and load tool: a Java service's lock, played on the wire, to check
// that rlock and Redisson exclude and wake each other, and to measure what
// Redisson's own scripts cost beside rlock's.
//
// Two levels are offered:
//
//   - [TryAcquire] and [Unlock] run Redisson's acquire and unlock scripts
//     once, for a test that drives the protocol step by step.
//   - [Client] is a whole Redisson process (a RedissonClient): one id, and
//     one subscription per lock name shared by its threads, whose every "0"
//     message wakes one waiting thread. Its [Lock] (RLock) waits as Redisson
//     waits: retry on "0" or when the holder's TTL runs out, nothing else.
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
//
// What is left out: the watchdog (a lease ≤ 0 takes the watchdog timeout,
// 30 s, as Redisson does, but is never renewed: the tests and the load tool
// hold for milliseconds), the async API, the read/write lock's "1" message,
// WAIT for replicas (evalWriteSyncedNoRetryAsync). Sharded pub/sub on a
// Redis 7 cluster is [NewShardedClient]. Redisson shares a subscription
// connection among several channels; here each entry has its own, which
// changes no message a thread sees.
package redisson
