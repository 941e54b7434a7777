package lockmw

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// Batching: the hot path's round trips of one Client (the RESTORE of the
// fast path, the acquire and release scripts) share pipelines when callers
// overlap, so that a service taking many independent locks at once pays one
// round trip, one system call each way and one connection for many of
// them, on the client and on Redis.
//
// A call that finds no round trip of the batcher under way runs at once,
// on its own goroutine, as it would without batching: a lone caller waits
// for nothing and gains nothing. Any other call is queued. The first call
// queued while fewer than maxInFlight round trips are under way starts a
// goroutine that sends the queue (the second round trip, gathered as
// below: not that call alone); otherwise, when a round trip returns, its
// goroutine sends everything queued meanwhile as one pipeline, and so on
// while calls keep coming (never waiting for a batch to fill); it ends when
// the queue is empty.
//
// Before it takes the queue, that goroutine yields (runtime.Gosched) for as
// long as the queue grows, a few times at most: the callers its last
// pipeline answered are runnable then, and most send their next round trip
// at once (an Unlock after its Lock, the next Lock). Without the yield the
// callers split into two groups that take turns, each half as big, one
// round trip apart (64 goroutines: 31 commands per pipeline instead of 49,
// and half the locks a second). It waits for no timer and no caller that is
// not already runnable: when nothing else runs, the yield returns at once.
//
// Every call keeps its own bound: a queued call whose context ends is taken
// out (it was never sent), and a call whose context ends while its pipeline
// is under way returns then (scripts.InFlight) as go-redis does with
// ContextTimeoutEnabled. What such a call did after its caller gave up is
// undone as for any lost reply: the undo chores (chores.go) run once the
// round trips under way have ended (settled), so that an undo never
// overtakes what it undoes (a pipeline may still wait for a connection
// when its caller gives up).
//
// The batching lives above the back-end seam (package backend): any
// back-end whose Pipeline sends its commands in one round trip per node
// (backend.Info.Batch) gets it, and the merged releases with it. The
// pipeline runs on a context detached from its first caller's: go-redis
// hooks see the batch, with the values of that caller's context (a span),
// through ProcessPipelineHook (its short releases as one EVALSHA of
// fastrelease.lua over their locks, batchmerge.go); a call run at once is
// seen through ProcessHook with its own context.
//
// On a cluster every master has a lane of its own (a queue, its calls run at
// once and its senders, maxInFlight round trips under way at most): calls
// for one master share that master's pipelines, and a slow master holds up
// only its own callers. A call's lane is its first key's master
// (backend.NodeOf; go-redis's: ClusterClient.MasterForKey, the cluster
// state go-redis keeps). The pipeline still goes through the back-end's
// Pipeline (go-redis's: the ClusterClient), so the user's hooks on it see
// every command, and go-redis routes each command as usual: a call whose
// slot moved meanwhile goes where the slot now is (go-redis follows MOVED and
// ASK for the commands of a pipeline; a stale lane only batches less well),
// and a fail-over fails the calls of that pipeline as it fails a lone call.
// Short releases merge only within one hash slot (a script's keys must
// share one). A quorum does not batch. WithoutBatching turns it off.
type batcher struct {
	be      backend.Backend
	cluster bool           // a lane per master; false: the one lane
	wg      sync.WaitGroup // the goroutines that send the queues

	mu      sync.Mutex
	closed  bool             // Close was called: no new goroutine; calls run at once
	lane                     // a single Redis's lane
	lanes   map[string]*lane // a cluster's, by master address ("" when the master is unknown)
	started uint64           // round trips begun; each is numbered by this count
	under   []uint64         // the numbers of the round trips under way (maxInFlight per lane at most)
	wakeAt  uint64           // settled's: call onEnd once no round trip up to it is under way (0: no)
	onEnd   func()           // the renewer's wake: non-blocking
}

// lane is one node's queue: the calls for it run at once or queued, and
// the goroutines sending its queue. Its fields are guarded by batcher.mu.
type lane struct {
	atOnce  int // calls run at once under way
	senders int // goroutines sending the queue
	queue   []*queuedCmd
	spare   []*queuedCmd // a sent batch's slice, to queue in again
}

// maxInFlight bounds the round trips of one lane (one node) under way at
// once: calls run at once and goroutines sending the queue (each has one round
// trip under way, or gathers its next). A call runs at once when none is
// busy; the first call queued while fewer are busy starts a sender. (Sent
// alone, that call took a round trip of its own beside every pipeline, and
// the callers answered together split into ever smaller groups: on a
// remote server fewer locks a second, on loopback more of Redis's CPU per
// lock, docs/performance-history.md.) It is two: the server answers one pipeline
// while the client sends or reads the other, and a queued call waits for
// half a round trip on a remote server instead of a whole one (at 500 µs
// each way about 1.1 × rueidislock's locks a second instead of 0.9 ×,
// docs/performance-history.md). Two round trips of one Client may reach Redis in
// either order; none of the hot path's calls depends on another's order
// but through its caller, which waits for the first before it sends the
// second (a chore that must follow a call, an undo, waits until it
// settled: chores.go). The accounting (atOnce, senders, the numbered round
// trips settled waits for) holds for any bound.
const maxInFlight = 2

// queuedCmd is one call waiting in the batcher's queue.
type queuedCmd struct {
	ctx   context.Context
	cmd   *backend.Cmd
	state atomic.Int32 // queuedWaiting, queuedSent, queuedDone, queuedGaveUp
	done  chan struct{}
}

const (
	queuedWaiting = iota // in the queue
	queuedSent           // in a pipeline under way
	queuedDone           // its reply is in cmd
	queuedGaveUp         // its caller returned: the batcher no longer answers it
)

// newBatcher returns be's batcher, or nil when be does not batch
// (backend.Info.Batch: go-redis's *redis.Client, failover client and
// *redis.ClusterClient do).
func newBatcher(be backend.Backend, off bool) *batcher {
	info := be.Info()
	if off || !info.Batch {
		return nil
	}
	if info.Cluster {
		return &batcher{be: be, cluster: true, lanes: make(map[string]*lane)}
	}
	return &batcher{be: be}
}

// laneOf returns the lane of cmd: the one lane, or on a cluster that of the
// master serving cmd's first key. It takes b.mu, and returns with it held.
func (b *batcher) laneOf(ctx context.Context, cmd *backend.Cmd) *lane {
	if !b.cluster {
		b.mu.Lock()
		return &b.lane
	}
	addr := ""
	if key, ok := cmd.FirstKey(); ok {
		if node, err := b.be.NodeOf(ctx, key); err == nil {
			addr = node
		}
	}
	b.mu.Lock()
	l := b.lanes[addr]
	if l == nil {
		l = &lane{}
		b.lanes[addr] = l
	}
	return l
}

// Process runs cmd, at once or in a later pipeline. When ctx ends first it
// returns ctx's error; if cmd was sent by then, the error is a
// scripts.InFlight and cmd belongs to the pipeline still: the caller must
// not read it.
func (b *batcher) Process(ctx context.Context, cmd *backend.Cmd) error {
	l := b.laneOf(ctx, cmd) // b.mu held
	busy := l.atOnce + l.senders
	if b.closed || busy == 0 {
		var n uint64
		if !b.closed {
			l.atOnce++
			n = b.beginLocked()
		}
		b.mu.Unlock()
		err := b.be.Process(ctx, cmd)
		if n != 0 {
			b.ended1(l, n)
		}
		return err
	}
	q := &queuedCmd{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	l.queue = append(l.queue, q)
	second := busy < maxInFlight && len(l.queue) == 1
	if second {
		l.senders++
		b.wg.Add(1)
	}
	b.mu.Unlock()
	if second {
		go b.sendCounted(l)
	}
	select {
	case <-q.done:
		return cmd.Err()
	case <-ctx.Done():
	}
	if q.state.CompareAndSwap(queuedWaiting, queuedGaveUp) {
		err := ctxErr(ctx)
		cmd.SetErr(err)
		return err
	}
	if q.state.CompareAndSwap(queuedSent, queuedGaveUp) {
		return inFlight{ctxErr(ctx)}
	}
	<-q.done // answered just in time
	return cmd.Err()
}

// ended1 ends round trip n, a call run at once: the calls queued meanwhile
// go out in pipelines, sent by a goroutine (after Close, by this one). The
// queue is never left without a sender or a call run at once to start one:
// a call queues only when all maxInFlight are busy, and a sender ends only
// when it finds the queue empty.
func (b *batcher) ended1(l *lane, n uint64) {
	b.mu.Lock()
	l.atOnce--
	b.endedLocked(n)
	switch {
	case len(l.queue) == 0 || l.atOnce+l.senders >= maxInFlight:
		b.mu.Unlock()
	case b.closed:
		l.senders++
		b.mu.Unlock()
		b.send(l)
	default:
		l.senders++
		b.wg.Add(1)
		b.mu.Unlock()
		go b.sendCounted(l)
	}
}

// sendCounted is send on a goroutine of its own, counted in b.wg (Close
// waits for it).
func (b *batcher) sendCounted(l *lane) {
	defer b.wg.Done()
	b.send(l)
}

// send sends l's queue as pipelines, one after the other, until it is
// empty. Another sender may run beside it (maxInFlight): each takes what
// was queued when its last pipeline returned.
func (b *batcher) send(l *lane) {
	merge := releaseMerge{slotted: b.cluster} // a cluster's lanes merge per hash slot only
	for {
		b.mu.Lock()
		b.gatherLocked(l)
		qs := l.queue
		if len(qs) == 0 {
			l.senders--
			b.mu.Unlock()
			return
		}
		l.queue, l.spare = l.spare, nil
		n := b.beginLocked()
		b.mu.Unlock()
		b.pipeline(qs, &merge)
		clear(qs)
		b.mu.Lock()
		b.endedLocked(n)
		l.spare = qs[:0]
		b.mu.Unlock()
	}
}

// gatherYields bounds gatherLocked's yields.
const gatherYields = 8

// gatherLocked yields to the runnable goroutines while they add to l's
// queue (the callers the last round trip answered), gatherYields times at
// most; b.mu is held, and released while yielding.
func (b *batcher) gatherLocked(l *lane) {
	for i, n := 0, -1; i < gatherYields && n != len(l.queue); i++ {
		n = len(l.queue)
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
	}
}

// pipeline sends the calls of qs whose callers still wait, in one pipeline
// (the short releases merged, batchmerge.go), and answers them.
func (b *batcher) pipeline(qs []*queuedCmd, merge *releaseMerge) {
	var ctx context.Context
	n := 0
	for _, q := range qs {
		if !q.state.CompareAndSwap(queuedWaiting, queuedSent) {
			continue
		}
		if n == 0 {
			ctx = context.WithoutCancel(q.ctx)
		}
		merge.queue(q.cmd)
		qs[n] = q
		n++
	}
	if n == 0 {
		return
	}
	_ = b.be.Pipeline(ctx, merge.send())
	merge.answer()
	merge.reset()
	for _, q := range qs[:n] {
		if q.state.CompareAndSwap(queuedSent, queuedDone) {
			close(q.done)
		}
	}
}

// beginLocked numbers a round trip begun and counts it under way; b.mu is
// held.
func (b *batcher) beginLocked() uint64 {
	b.started++
	b.under = append(b.under, b.started)
	return b.started
}

// endedLocked counts round trip n ended, and calls onEnd when settled asked
// for it and the round trips it waited for have ended; b.mu is held.
func (b *batcher) endedLocked(n uint64) {
	for i, u := range b.under {
		if u == n {
			b.under = append(b.under[:i], b.under[i+1:]...)
			break
		}
	}
	if b.wakeAt != 0 && b.settledLocked(b.wakeAt) {
		b.wakeAt = 0
		if b.onEnd != nil {
			b.onEnd()
		}
	}
}

// begun is the number of round trips begun so far: an undo queued now
// waits for them (settled).
func (b *batcher) begun() uint64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

// settled reports whether the first n round trips have ended (they may end
// in any order): what a caller gave up on in flight has then reached Redis,
// and an undo sent now cannot overtake it. When false, onEnd (the renewer's
// wake) is called once they have ended; the caller never blocks.
func (b *batcher) settled(n uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.settledLocked(n) {
		return true
	}
	if b.wakeAt == 0 || n < b.wakeAt {
		b.wakeAt = n
	}
	return false
}

// settledLocked reports whether no round trip numbered n or lower is under
// way; b.mu is held.
func (b *batcher) settledLocked(n uint64) bool {
	for _, u := range b.under {
		if u <= n {
			return false
		}
	}
	return true
}

// close makes later calls run at once and waits for the goroutines sending
// the queue, so that Close leaves nothing running.
func (b *batcher) close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// inFlight is the error of a call whose context ended while its command
// was in a pipeline under way (scripts.InFlight).
type inFlight struct{ err error }

func (e inFlight) Error() string  { return e.err.Error() }
func (e inFlight) Unwrap() error  { return e.err }
func (e inFlight) InFlight() bool { return true }
