package lockmw

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Batching: the hot path's round trips of one Client (the RESTORE of the
// fast path, the acquire and release scripts) share pipelines when callers
// overlap, so that a service taking many independent locks at once pays one
// round trip, one system call each way and one connection for many of
// them, on the client and on Redis.
//
// A call that finds no round trip of the batcher under way runs at once, on
// its own goroutine, as it would without batching: a lone caller waits for
// nothing and gains nothing. A call that finds one under way is queued;
// when that round trip returns, one goroutine sends everything queued
// meanwhile as one pipeline, and so on while calls keep coming (never
// waiting for a batch to fill); it ends when the queue is empty.
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
// The pipeline runs on a context detached from its first caller's: go-redis
// hooks see the batch, with the values of that caller's context (a span),
// through ProcessPipelineHook (its short releases as one EVALSHA of
// fastrelease.lua over their locks, batchmerge.go); a call run at once is seen through
// ProcessHook with its own context. Only a single Redis (a *redis.Client,
// Sentinel's too) batches; a cluster client or a quorum does not.
// WithoutBatching turns it off.
type batcher struct {
	rdb redis.UniversalClient
	wg  sync.WaitGroup // the goroutine that sends the queue

	mu       sync.Mutex
	busy     bool // a round trip is under way (run at once, or a pipeline)
	closed   bool // Close was called: no new goroutine; calls run at once
	queue    []*queuedCmd
	spare    []*queuedCmd // the last batch's slice, to queue in again
	started  uint64       // round trips begun
	finished uint64       // and ended
	wakeAt   uint64       // settled's: call onEnd once finished reaches it (0: no)
	onEnd    func()       // the renewer's wake: non-blocking

	merge releaseMerge // the pipeline's short releases (batchmerge.go): the sending goroutine's
}

// queuedCmd is one call waiting in the batcher's queue.
type queuedCmd struct {
	ctx   context.Context
	cmd   redis.Cmder
	state atomic.Int32 // queuedWaiting, queuedSent, queuedDone, queuedGaveUp
	done  chan struct{}
}

const (
	queuedWaiting = iota // in the queue
	queuedSent           // in a pipeline under way
	queuedDone           // its reply is in cmd
	queuedGaveUp         // its caller returned: the batcher no longer answers it
)

// newBatcher returns rdb's batcher, or nil when rdb does not batch.
func newBatcher(rdb redis.UniversalClient, off bool) *batcher {
	if _, ok := rdb.(*redis.Client); !ok || off {
		return nil
	}
	return &batcher{rdb: rdb}
}

// Process runs cmd, at once or in the next pipeline. When ctx ends first it
// returns ctx's error; if cmd was sent by then, the error is a
// scripts.InFlight and cmd belongs to the pipeline still: the caller must
// not read it.
func (b *batcher) Process(ctx context.Context, cmd redis.Cmder) error {
	b.mu.Lock()
	if b.closed || !b.busy {
		now := !b.closed
		if now {
			b.busy = true
			b.started++
		}
		b.mu.Unlock()
		err := b.rdb.Process(ctx, cmd)
		if now {
			b.ended1()
		}
		return err
	}
	q := &queuedCmd{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	b.queue = append(b.queue, q)
	b.mu.Unlock()
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

// ended1 ends a round trip run at once: the calls queued meanwhile go out
// in a pipeline, sent by a goroutine (after Close, by this one).
func (b *batcher) ended1() {
	b.mu.Lock()
	b.endedLocked()
	switch {
	case len(b.queue) == 0:
		b.busy = false
		b.mu.Unlock()
	case b.closed:
		b.mu.Unlock()
		b.send()
	default:
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			b.send()
		}()
	}
}

// send sends the queue as pipelines, one after the other, until it is empty.
func (b *batcher) send() {
	for {
		b.mu.Lock()
		b.gatherLocked()
		qs := b.queue
		if len(qs) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		b.queue, b.spare = b.spare, nil
		b.started++
		b.mu.Unlock()
		b.pipeline(qs)
		clear(qs)
		b.mu.Lock()
		b.endedLocked()
		b.spare = qs[:0]
		b.mu.Unlock()
	}
}

// gatherYields bounds gatherLocked's yields.
const gatherYields = 8

// gatherLocked yields to the runnable goroutines while they add to the
// queue (the callers the last round trip answered), gatherYields times at
// most; b.mu is held, and released while yielding.
func (b *batcher) gatherLocked() {
	for i, n := 0, -1; i < gatherYields && n != len(b.queue); i++ {
		n = len(b.queue)
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
	}
}

// pipeline sends the calls of qs whose callers still wait, in one pipeline
// (the short releases merged, batchmerge.go), and answers them.
func (b *batcher) pipeline(qs []*queuedCmd) {
	var ctx context.Context
	var p redis.Pipeliner
	n := 0
	for _, q := range qs {
		if !q.state.CompareAndSwap(queuedWaiting, queuedSent) {
			continue
		}
		if p == nil {
			ctx = context.WithoutCancel(q.ctx)
			p = b.rdb.Pipeline()
		}
		if !b.merge.take(q.cmd) {
			_ = p.Process(ctx, q.cmd)
		}
		qs[n] = q
		n++
	}
	if p == nil {
		return
	}
	b.merge.send(ctx, p)
	_, _ = p.Exec(ctx)
	b.merge.answer()
	clear(b.merge.parts)
	clear(b.merge.runs)
	b.merge.parts, b.merge.runs = b.merge.parts[:0], b.merge.runs[:0]
	for _, q := range qs[:n] {
		if q.state.CompareAndSwap(queuedSent, queuedDone) {
			close(q.done)
		}
	}
}

// endedLocked counts a round trip ended, and calls onEnd when settled
// asked for it and the round trips it waited for have ended; b.mu is held.
func (b *batcher) endedLocked() {
	b.finished++
	if b.wakeAt != 0 && b.finished >= b.wakeAt {
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

// settled reports whether the first n round trips have ended: what a
// caller gave up on in flight has then reached Redis, and an undo sent now
// cannot overtake it. When false, onEnd (the renewer's wake) is called once
// they have ended; the caller never blocks.
func (b *batcher) settled(n uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished >= n {
		return true
	}
	if b.wakeAt == 0 || n < b.wakeAt {
		b.wakeAt = n
	}
	return false
}

// close makes later calls run at once and waits for the goroutine sending
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
