// Command rlock shows and manages the locks and semaphores of rlock (and of
// Redisson, whose layout rlock shares) in a Redis: who holds a lock and
// for how long still, who waits for it, and what changes.
//
// Install it with
//
//	go install github.com/go-rlock/rlock/cmd/rlock@latest
//
// Usage:
//
//	rlock [connection flags] [-json] ls [-limit N] [-count N] [PATTERN]
//	rlock [connection flags] [-json] show NAME
//	rlock [connection flags] [-json] watch [-interval D] NAME
//	rlock [connection flags] unlock [-y] NAME
//
// ls lists the locks, read-write locks and semaphores whose name matches PATTERN (a Redis glob,
// default "*"), with SCAN and COUNT (never KEYS) on the server or on every
// master of a cluster; it stops after -limit entries (default 1000) and then
// says so on stderr.
//
// show prints a lock's holder field(s) with their hold count, the trace id
// of the metadata stored with each hold (a W3C traceparent from otelhooks;
// for every kind) and whether the holder looks like an rlock client, when
// the hold expires unless renewed, the fencing token, and the waiter queue
// in order with each waiter's client and when its queue entry expires; a read-write lock's
// mode, writer and readers (each reader level's remaining TTL) and its queue
// of readers and writers; or a semaphore's free permits and each permit's
// holder and expiry.
//
// watch prints one line per change until interrupted: acquired, released,
// handed over (from → to, and the gap between them), lost (the TTL ran
// out), waiter joined, waiter gave up, for every kind. It polls the lock every -interval (default 100ms) and compares;
// on a single node or Sentinel it also subscribes to the lock's channels
// (Redisson's unlock channel, and rlock's hand-off channels with PSUBSCRIBE,
// which name every hand-off exactly) and to the key's keyspace events when
// the server publishes them (notify-keyspace-events with K and x). On a
// cluster, where rlock publishes with sharded pub/sub and there is no
// pattern subscription, it relies on polling, woken early by Redisson's
// channel. What it can miss: a change that begins and ends between two polls
// with no hand-off message naming it (a short hold; on a cluster, a hand-off
// too), and on a cluster whether a waiter that left the queue gave up or
// held the lock between two polls ("waiter_left"). It subscribes to
// Redisson's channels together with rlock's roll-call channel, as rlock
// clients do, so that rlock does not take it for a waiting Redisson client.
//
// unlock force-unlocks a lock, whoever holds it: the lock goes to the first
// queued waiter, as at a release, and the holder learns it lost the lock at
// its next renewal. It refuses semaphores and read-write locks. Without -y it asks for confirmation on a terminal and
// refuses when standard input is not one. It is the only command that
// writes.
//
// Connection flags:
//
//	-addr host:port   the server (default localhost:6379); with -cluster, seed
//	                  nodes, with -sentinel, the sentinels (comma-separated)
//	-url URL          redis://… or rediss://… instead of -addr
//	-cluster          the addresses are a Redis Cluster's
//	-sentinel MASTER  ask the sentinels at -addr for the master MASTER
//	-user NAME        ACL user name
//	-password P       password (default $REDIS_PASSWORD)
//	-tls              connect with TLS
//	-timeout D        bound on each request (default 10s)
//	-namespace P      the locks of a lockmw Client made WithNamespace(P)
//
// REDIS_URL is read when no connection flag is given (-namespace is not
// one).
//
// -json prints JSON Lines: one compact object per line, for every command.
// -json and -namespace may also follow the command's name.
//
// With -namespace, names are given and shown as the application gives them
// to lockmw, and every key and channel is the namespaced one (lockmw's
// internal/layout rules): ls lists only that namespace's locks (SCAN MATCH
// P*, PATTERN matched against the names, the namespace's side keys left
// out), so an ACL user confined to ~P* &P* can run it; see docs/operators.md
// for the commands that user needs.
//
// Exit status: 0 success; 1 not locked (show of an unknown name, unlock of a
// free lock, or an unlock declined at the prompt); 2 a usage error, or the
// server could not be reached, refused the credentials or lacks a needed
// command (one line on stderr).
//
// See docs/operators.md for the JSON shapes and a transcript.
package main
