package lockmw

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
)

// NewQuorum returns a Client whose locks live on a majority of independent
// Redis masters (the Redlock algorithm), with the same API and semantics as
// New's: reentrant, renewed by the watchdog, a lost signal, fencing tokens.
//
//   - An acquisition runs the acquire script on every master at once and
//     succeeds when a majority took it within the validity time (the TTL minus
//     the time the attempt took minus a drift margin of 1% + 2ms); otherwise
//     it undoes what it took and reports the lock busy.
//   - Contenders that split the masters between them, none with a majority
//     (as every waiter retries when a crashed holder's key expires), resolve
//     it in one round: the one that won the most masters, then the first in
//     the masters' order by run ID, keeps what it won for a short grace
//     (a quarter of the TTL, at most 200ms) and asks the others again; the
//     others undo at once, quietly, and wait until it holds the lock or
//     gives up. The validity rule is unchanged.
//   - Unlock and ForceUnlock run on every master; renewal too, and a hold
//     whose renewal no longer reaches a majority is lost (ErrLockLost).
//   - Fencing: once a majority is won, a second round gives the hold a
//     token above every counter of a majority and writes it there. Any two
//     majorities share a master, so a later hold's token is strictly greater.
//   - Waiting uses pub/sub on every master, without the hand-off queue: any
//     master's unlock message wakes one waiter of a Client.
//   - Every kind works: a Semaphore's permits are quorum mutexes of their
//     own, and an RWMutex's sides quorum mutexes with a gate between them on
//     each master (see Semaphore, RWMutex, docs/topologies.md).
//
// Every operation returns as soon as the masters that answered decide it: a
// master that is slow, paused or unreachable (a read that would wait for
// go-redis's read timeout, 5 s with default options) delays no Lock, TryLock,
// renewal or Unlock while a majority answers. What the late master does when
// it answers or resumes is reconciled in the background: an acquisition that
// lands there after its hold ended, or after its attempt failed, takes
// nothing, and one that lands while the hold lives is renewed and released
// with it. A master seen to restart (a new run ID) is not counted for
// acquisitions until one watchdog timeout has passed, Redlock's delayed
// restart: a master that restarted empty has forgotten the holds it had.
//
// Redlock's limits apply (Kleppmann, "How to do distributed locking", 2016):
// it assumes bounded clock drift, network delay and process pauses; a holder
// paused past its TTL (GC, swap, SIGSTOP) still believes it holds the lock
// when it resumes. A master that restarted before this Client ever reached it
// cannot be told from a new one, and holds with a lease longer than the
// watchdog timeout outlive its delay: run masters with persistence (appendfsync
// always) or restart them no sooner than the longest TTL. Guard the protected
// resource with the fencing token (WithFencing) so that it rejects the stale
// holder.
//
// The clients must be independent masters, not a cluster (NewQuorum panics
// on a *redis.ClusterClient), and must not be used by New Clients on the same
// names. NewQuorum panics when clients is empty or holds a nil client.
//
// NewQuorum is NewQuorumOf with the go-redis back-end of each client.
func NewQuorum(clients []redis.UniversalClient, opts ...Option) *Client {
	if len(clients) == 0 {
		panic("lockmw: NewQuorum: at least one Redis client is required")
	}
	members := make([]backend.Backend, len(clients))
	for i, r := range clients {
		if r == nil {
			panic(fmt.Sprintf("lockmw: NewQuorum: client %d is nil", i))
		}
		members[i] = goredis.New(r)
	}
	return newQuorum(members, opts, "NewQuorum", "client")
}

// NewQuorumOf is NewQuorum over back-ends (package lockmw/backend), one per
// independent master, of any clients: one Client ID owns the locks on every
// master. It panics when masters is empty, holds a nil back-end or a
// cluster's (backend.Info.Cluster).
func NewQuorumOf(masters []backend.Backend, opts ...Option) *Client {
	if len(masters) == 0 {
		panic("lockmw: NewQuorumOf: at least one back-end is required")
	}
	for i, b := range masters {
		if b == nil {
			panic(fmt.Sprintf("lockmw: NewQuorumOf: back-end %d is nil", i))
		}
	}
	return newQuorum(slices.Clone(masters), opts, "NewQuorumOf", "back-end")
}

// newQuorum is the quorum Client of members, none of them a cluster's
// (fn and what name the constructor and the one that is in the panic).
func newQuorum(members []backend.Backend, opts []Option, fn, what string) *Client {
	for i, b := range members {
		if b.Info().Cluster {
			panic(fmt.Sprintf("lockmw: %s: %s %d is a cluster %s; a quorum needs independent masters", fn, what, i, what))
		}
	}
	return newClient(members[0], members, opts)
}

// quorumStore keeps the locks on a majority of independent masters (the
// Redlock algorithm; see NewQuorum): each operation runs on every master at
// once and decides from the answers of those that answer first
// (quorumask.go). It never queues waiters, so it is never handed a lock.
type quorumStore struct {
	c       *Client
	masters []backend.Backend
	members []*member
	need    int // how many members make a majority

	tries atomic.Uint64 // numbers acquisition attempts (quorumacquire.lua)
	dirty dirtyFields   // fields whose acquisition a master has not answered
}

// member is one master of a quorum: its client, what is known of its
// restarts (quorumrestart.go) and its background work (quorumend.go).
type member struct {
	q  *quorumStore
	i  int
	be backend.Backend

	restarts restartWatch
	redo     redoQueue
	// batches counts the background pipelines (renewals, metadata) in
	// flight, so that they do not pile up behind a master that does not
	// answer (runBatches).
	batches atomic.Int32
}

// newQuorumStore returns the store of c on the masters rdbs.
func newQuorumStore(c *Client, masters []backend.Backend) *quorumStore {
	q := &quorumStore{c: c, masters: masters, need: len(masters)/2 + 1}
	q.dirty.fields = make(map[string][]int64)
	for i, b := range masters {
		q.members = append(q.members, &member{q: q, i: i, be: b})
	}
	return q
}

// nodes returns the masters.
func (q *quorumStore) nodes() []backend.Backend { return q.masters }

// majority is how many masters make one.
func (q *quorumStore) majority() int { return q.need }

// claim never succeeds: a quorum waiter is never queued, so never handed
// the lock.
func (q *quorumStore) claim(context.Context, *Mutex, attempt) (int64, bool) { return 0, false }

// syncReplicas does nothing: the majority of masters is the redundancy.
func (q *quorumStore) syncReplicas(context.Context, engine, string) error { return nil }
