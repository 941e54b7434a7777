package lockmw

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// maxBatch is the most locks one renewal script renews.
const maxBatch = 100

// renewer is the one goroutine per Client that renews every hold without a
// lease (Redisson's watchdog): every timeout/3 it renews them all, in scripts
// of at most maxBatch locks (grouped by hash slot on a cluster) sent in one
// pipeline per node. Between renewals, and when kicked, it runs the Client's
// background chores (chores.go): undoing abandoned attempts, claiming holds
// handed over, writing hook metadata and sweeping idle subscriptions.
type renewer struct {
	c     *Client
	mu    sync.Mutex
	holds map[*hold]struct{}
	// The renewal round under way: its holds (hold.inRound, under mu) and
	// a channel closed when it ends (awaitRound).
	roundDone chan struct{}
	chores
	kick     chan struct{}
	sweeping []atomic.Bool // per hub: a sweep is under way (sweepHubs)
}

// newRenewer returns c's renewer; run starts it.
func newRenewer(c *Client) *renewer {
	return &renewer{
		c:      c,
		holds:  make(map[*hold]struct{}),
		chores: chores{metas: make(map[*hold]string)},
		kick:   make(chan struct{}, 1),
	}
}

// run is the renewer's goroutine, until the Client closes.
func (r *renewer) run() {
	defer r.c.wg.Done()
	t := time.NewTicker(r.c.opts.watchdog / 3)
	defer t.Stop()
	for {
		select {
		case <-r.c.closed:
			r.runUndos(true)
			return
		case <-t.C:
			r.runUndos(false)
			r.renew()
			r.sweepHubs()
		case <-r.kick:
			r.claimPending()
			r.runUndos(false)
			r.writeMetas()
		}
	}
}

// wake has the goroutine run its chores soon.
func (r *renewer) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// add has h renewed from now on.
func (r *renewer) add(h *hold) {
	r.mu.Lock()
	r.holds[h] = struct{}{}
	r.mu.Unlock()
}

// remove stops renewing h.
func (r *renewer) remove(h *hold) {
	r.mu.Lock()
	delete(r.holds, h)
	delete(r.metas, h)
	r.mu.Unlock()
}

// renew renews every hold.
func (r *renewer) renew() {
	r.mu.Lock()
	hs := make([]*hold, 0, len(r.holds))
	for h := range r.holds {
		h.inRound = true
		hs = append(hs, h)
	}
	done := make(chan struct{})
	r.roundDone = done
	r.mu.Unlock()
	r.renewHolds(hs)
	r.mu.Lock()
	for _, h := range hs {
		h.inRound = false
	}
	r.roundDone = nil
	r.mu.Unlock()
	close(done)
}

// awaitRound stops renewing h and waits, at most until ctx ends, for a
// renewal of h already sent to be answered: UnlockAt's shorter TTL must come
// after it, or the renewal would give the key a whole watchdog timeout again.
func (r *renewer) awaitRound(ctx context.Context, h *hold) {
	r.mu.Lock()
	delete(r.holds, h)
	var done chan struct{}
	if h.inRound {
		done = r.roundDone
	}
	r.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}

// batchesOf splits holds into script batches: at most maxBatch each, and
// one hash slot each on a cluster.
func (r *renewer) batchesOf(hs []*hold) [][]*hold {
	var out [][]*hold
	if !r.c.cluster {
		for len(hs) > 0 {
			n := min(len(hs), maxBatch)
			out = append(out, hs[:n])
			hs = hs[n:]
		}
		return out
	}
	bySlot := make(map[int][]*hold)
	for _, h := range hs {
		s := keySlot(h.lk.renewKey)
		b := bySlot[s]
		if len(b) == maxBatch {
			out = append(out, b)
			b = nil
		}
		bySlot[s] = append(b, h)
	}
	for _, b := range bySlot {
		out = append(out, b)
	}
	return out
}

// renewHolds renews hs: the mutexes', the semaphores' permits and the
// read-write locks' apart (each kind has its renewal script).
func (r *renewer) renewHolds(hs []*hold) {
	var mutexes, permits, rws []*hold
	for _, h := range hs {
		switch h.lk.kind {
		case kindSemaphore:
			permits = append(permits, h)
		case kindRead, kindWrite:
			rws = append(rws, h)
		default:
			mutexes = append(mutexes, h)
		}
	}
	r.renewKind(scripts.Renew, mutexes)
	r.renewKind(scripts.SemRenew, permits)
	r.renewKind(scripts.RWRenew, rws)
}

// renewKind renews hs, holds of one kind, with its script sc: one script
// per batch, all batches in one pipeline per node.
func (r *renewer) renewKind(sc backend.Script, hs []*hold) {
	c := r.c
	if len(hs) == 0 {
		return
	}
	batches := r.batchesOf(hs)
	calls := make([]scripts.Call, len(batches))
	ttl := msCeil(c.opts.watchdog)
	for i, b := range batches {
		keys := make([]string, len(b))
		args := make([]any, 1, len(b)+1)
		args[0] = ttl
		for j, h := range b {
			keys[j] = h.lk.renewKey
			args = append(args, h.field+h.lk.suffix)
		}
		calls[i] = scripts.Call{Keys: keys, Args: args}
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, c.opts.watchdog/3)
	defer cancel()
	sent := time.Now()
	perNode := c.store.runBatches(ctx, sc, calls)
	took := time.Since(sent)
	for i, b := range batches {
		r.settle(ctx, batchVotes(perNode, i, b), sent, took)
	}
}

// batchOutcome is what the nodes answered to the renewal of one batch.
type batchOutcome struct {
	holds []*hold
	votes []quorumVotes // per hold
	nodes int           // how many nodes were asked
	err   error         // the first error
}

// batchVotes counts every node's answer for batch i, the holds b.
func batchVotes(perNode [][]*backend.Cmd, i int, b []*hold) batchOutcome {
	var batchErr error
	n := len(b)
	votes := make([]quorumVotes, n)
	for _, cmds := range perNode {
		if cmds == nil { // not waited for: no vote, nothing to report
			continue
		}
		vals, err := cmds[i].Int64Slice()
		if err == nil && len(vals) != n {
			err = fmt.Errorf("lockmw: renewal returned %d results for %d locks", len(vals), n)
		}
		for j := range n {
			switch {
			case err != nil:
				votes[j].failed++
			case vals[j] == 1:
				votes[j].ok++
			default:
				votes[j].gone++
			}
		}
		if err != nil && batchErr == nil {
			batchErr = err
		}
	}
	return batchOutcome{holds: b, votes: votes, nodes: len(perNode), err: batchErr}
}

// settle applies a batch's renewal outcome to its holds (renewed, lost) and
// reports it to the Renewal hook.
func (r *renewer) settle(ctx context.Context, o batchOutcome, sent time.Time, took time.Duration) {
	c, b, batchErr := r.c, o.holds, o.err
	if batchErr != nil {
		c.log.Warn("lockmw: renewal failed", "locks", len(b), "err", batchErr)
		// A pipeline to a dead master does not refresh a cluster's slot
		// map by itself: ask for it, so the next renewal finds the
		// promoted replica.
		c.be.Refresh(ctx)
	}
	var ev RenewalEvent
	if c.opts.hooks.Renewal != nil {
		ev = RenewalEvent{Locks: make([]RenewedLock, len(b)), Err: batchErr, Duration: took, Sent: sent}
	}
	need := c.store.majority()
	for j, h := range b {
		out := o.votes[j].outcome(o.nodes, need)
		switch out {
		case RenewalOK:
			h.renewed(sent)
		case RenewalLost:
			if !h.releasing() {
				h.end(endLost, fmt.Errorf("%w: renewal found %q gone or someone else's", ErrLockLost, h.lk.name))
			}
		}
		if ev.Locks != nil {
			ev.Locks[j] = RenewedLock{LockInfo: h.lk.info(), Context: h.hookCtx, Outcome: out}
		}
	}
	if ev.Locks != nil {
		c.opts.hooks.Renewal(ev)
	}
}
