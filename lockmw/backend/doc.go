// Package backend is the seam beneath lockmw's engine: what a Redis client
// must do for lockmw's locks to live on it. The engine hands a back-end
// command lines — a script run (EVALSHA with its SHA, or EVAL with its
// source, the keys and the arguments), RESTORE, a read — and gets typed
// replies back; it never sees the client's own types. Nothing here knows a
// lock, a hold or a level: the scripts, their replies and every decision on
// them stay above the seam, and so do the batching of concurrent calls into
// pipelines and the merging of short releases, so that every back-end that
// pipelines gets them.
//
// A back-end implements [Backend]: Process (one command), Pipeline (several
// in one round trip per node) and Info (what the engine must know of the
// client: its topology, whether a call ends at its context's deadline, how
// long the client may re-send a command). The rest are capabilities a
// back-end may offer — pub/sub ([Backend.Subscribe], sharded where the server
// has it), routing on a cluster ([Backend.NodeOf], [Backend.Refresh]) and a
// pipeline on one connection for WAIT ([Backend.PipelineOn]) — with defaults
// in [Defaults], which every implementation embeds: a capability added to
// Backend later comes with a default there, so implementers keep compiling
// (River's MiddlewareDefaults is the model). A default answers
// [errors.ErrUnsupported]; the engine then refuses what needs it, loudly (a
// Lock that must wait without pub/sub fails with it; WithReplicaSync
// without PipelineOn panics in the Client's constructor).
//
// Replies cross the seam as Go values: nil (with the error [ErrNil]), int64,
// string, []any of these, a map as a flat []any of key, value…, and an
// element that is an error reply as an [Error]. Errors cross as values too:
// a server's error reply is an [Error] (its message as Redis sent it, so
// [IsNoScript], [IsBusyKey], [IsWrongType] and [IsTransient] class it), a
// closed client's is [ErrClosed], and a network or context error is itself.
//
// github.com/go-rlock/rlock/lockmw/backend/goredis is the back-end over
// go-redis v9 (every topology it serves); lockmw.New uses it. The modules
// github.com/go-rlock/rlock/lockmw/rueidisrlock and …/lockmw/valkeyrlock
// are the back-ends over rueidis and valkey-go.
// github.com/go-rlock/rlock/lockmw/backend/backendtest is the conformance
// suite every back-end runs, in the way of testing/fstest.
package backend
