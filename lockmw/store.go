package lockmw

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// store is where a Client's locks live: one Redis (a single node, Sentinel or
// a cluster; singleStore) or a majority of independent masters (NewQuorum;
// quorumStore). Every operation that differs between the two goes through
// it, so that nothing else asks which one a Client has. Each method runs one
// script (or read) of the lock protocol; the callers own timeouts, error
// wrapping and the hold's bookkeeping.
type store interface {
	// nodes are the back-ends the locks live on: the one, or every master
	// of the quorum.
	nodes() []backend.Backend
	// majority is how many nodes must agree on a per-hold result.
	majority() int

	// acquireFirst is a new acquisition's first attempt: the fast path
	// (RESTORE) when it may be taken, else tryAcquire.
	acquireFirst(ctx context.Context, m *Mutex, a attempt) (acquireReply, error)
	// tryAcquire runs acquire.lua once for a.
	tryAcquire(ctx context.Context, m *Mutex, a attempt) (acquireReply, error)
	// claim gives a lock handed to a.field its full TTL (claim.lua); false
	// when the claim window passed or Redis failed.
	claim(ctx context.Context, m *Mutex, a attempt) (int64, bool)
	// syncReplicas waits for WithReplicaSync's replicas (see replicas.go).
	syncReplicas(ctx context.Context, e engine, field string) error

	// reenter adds a level to field's hold under the latch of reqID: the
	// new count, -1 when the hold is gone, -2 when the request was undone.
	reenter(ctx context.Context, m *Mutex, field, reqID string) (int64, error)
	// undoReenter takes back (or forbids) the re-entry of reqID.
	undoReenter(ctx context.Context, m *Mutex, field, reqID string) error
	// release releases one level (release.lua's answer: 0 levels remain, 1
	// released, 2 left to expire, negative gone).
	release(ctx context.Context, m *Mutex, r releaseReq) (int64, error)
	// leave takes field out of the wait queue (leave.lua): the token and
	// true when keep and the lock was handed to it meanwhile.
	leave(ctx context.Context, m *Mutex, field string, keep bool, ttl time.Duration) (int64, bool, error)
	// forceUnlock deletes the lock whoever holds it; true when one existed.
	forceUnlock(ctx context.Context, m *Mutex) (bool, error)

	// isLocked, holdCount and pttl are Mutex's queries.
	isLocked(ctx context.Context, m *Mutex) (bool, error)
	holdCount(ctx context.Context, m *Mutex, field string) (int, error)
	pttl(ctx context.Context, m *Mutex) (time.Duration, error)

	// runBatches runs s once per call in one pipeline per node: the
	// commands of each node, in nodes' order; nil for a node a quorum did
	// not wait for (a majority answered first).
	runBatches(ctx context.Context, s backend.Script, calls []scripts.Call) [][]*backend.Cmd
}

// releaseReq is one release of a level: of hold h, level lvl (its latch),
// expiring in expireMS (0: now), last when it is the owner's last level.
type releaseReq struct {
	h        *hold
	lvl      *level
	expireMS int64
	last     bool
}

// newStore returns where the locks of c live: members, a quorum, when not
// nil, else be.
func newStore(c *Client, be backend.Backend, members []backend.Backend) store {
	if members == nil {
		return &singleStore{c: c, be: be}
	}
	return newQuorumStore(c, members)
}
