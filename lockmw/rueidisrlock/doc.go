// Package rueidisrlock runs lockmw on rueidis (github.com/redis/rueidis):
// New returns an ordinary *lockmw.Client whose commands go through a
// rueidis.Client — single node, Sentinel or cluster, as the client is — so
// that a service on rueidis does not open a go-redis client for its locks.
// Every lock kind, decorator and adapter takes that Client unchanged, and
// it shares the wire with go-redis's: a rueidis-backed Client and a
// go-redis one (or Redisson) on the same name exclude each other, queue
// together and hand over to each other.
//
// Backend returns the client as a lockmw/backend.Backend, for
// lockmw.NewFromBackend and lockmw.NewQuorumOf.
//
// How rueidis's mechanisms are used:
//   - Commands go through Do and DoMulti (the engine's pipelines, one
//     round trip per node, routed by rueidis by each command's first key),
//     never through DoCache: lock state is not read through client-side
//     caching, and invalidations wake no waiter.
//   - The engine's scripts are sent as EVALSHA with its own EVAL fallback
//     on NOSCRIPT (rueidis.NewLuaScript is not used: the engine builds and
//     latches its command lines above the seam).
//   - Waiters are woken through a dedicated connection (Dedicate) with
//     pub/sub hooks (SetPubSubHooks), not Receive, which blocks per
//     subscribe command: a plain subscription reconnects and subscribes its
//     channels again after a lost connection; a sharded one (a Redis 7
//     cluster) ends and the engine opens another on the slot's master.
//   - WithReplicaSync's touch and WAIT go in one DoMulti on one dedicated
//     connection of the key's master, so that WAIT counts that
//     connection's write.
//
// rueidis does not expose the options a client was built with: Info
// assumes rueidis's default ConnWriteTimeout (10 s), which bounds one read.
// A call returns at its context's deadline, and a context that is only
// cancelled aborts its call (rueidis queues such a call in its pipeline).
package rueidisrlock
