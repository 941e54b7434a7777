package lockmw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxBatch is the most locks one renewal script renews.
const maxBatch = 100

// watchdog is the one goroutine per Client that renews every hold without a
// lease every timeout/3, in scripts of at most maxBatch locks (grouped by hash
// slot on a cluster) sent in one pipeline, and writes hook metadata.
type watchdog struct {
	c        *Client
	mu       sync.Mutex
	holds    map[*hold]struct{}
	metas    map[*hold]string
	cleanups []cleanup // abandoned acquisitions to undo
	claims   []*hold   // holds handed over, to renew (claim) at once
	stopped  bool      // the goroutine has ended: clean up on the caller's goroutine
	kick     chan struct{}
}

type cleanup struct {
	m     *Mutex
	field string
	reqID string    // a re-entry to undo; "" for an acquisition
	until time.Time // retried at each watchdog tick until then
}

// undoReentry queues the undoing of a re-entry whose reply was lost.
func (w *watchdog) undoReentry(m *Mutex, field, reqID string) {
	w.queue(cleanup{m: m, field: field, reqID: reqID})
}

// abandon queues the clean-up of an acquisition that did not complete.
func (w *watchdog) abandon(m *Mutex, field string) {
	w.queue(cleanup{m: m, field: field})
}

func (w *watchdog) queue(cl cleanup) {
	// As long as a late request may still run: the latch's life.
	cl.until = time.Now().Add(time.Duration(w.c.latchMS) * time.Millisecond)
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		cl.run(context.Background())
		return
	}
	w.cleanups = append(w.cleanups, cl)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// runCleanups undoes the queued abandoned acquisitions.
func (w *watchdog) runCleanups(stop bool) {
	w.mu.Lock()
	cs := w.cleanups
	w.cleanups = nil
	w.stopped = w.stopped || stop
	w.mu.Unlock()
	// Bounded by a renewal interval so that renewals are not held up.
	ctx, cancel := context.WithTimeout(context.Background(), min(w.c.opts.releaseTimeout, w.c.opts.watchdog/3))
	defer cancel()
	var again []cleanup
	for _, cl := range cs {
		if err := cl.run(ctx); err != nil && !stop && time.Now().Before(cl.until) {
			again = append(again, cl)
		}
	}
	if len(again) > 0 { // at the next tick
		w.mu.Lock()
		w.cleanups = append(w.cleanups, again...)
		w.mu.Unlock()
	}
}

func (cl cleanup) run(ctx context.Context) error {
	m, c := cl.m, cl.m.c
	if cl.reqID == "" {
		_, _, err := m.leaveQueue(ctx, cl.field, false, 0)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.releaseTimeout)
	defer cancel()
	keys := []string{m.k.lock, m.k.latchBase + cl.reqID}
	undo := func(r redis.UniversalClient) error {
		return unreenterScript.Run(ctx, r, keys, cl.field, c.latchArg).Err()
	}
	var err error
	if c.isQuorum() {
		err = errors.Join(c.fanout(func(_ int, r redis.UniversalClient) error { return undo(r) })...)
	} else {
		err = undo(c.rdb)
	}
	if err != nil {
		c.log.Warn("lockmw: undoing a re-entry failed", "name", m.name, "err", err)
	}
	return err
}

func newWatchdog(c *Client) *watchdog {
	return &watchdog{
		c:     c,
		holds: make(map[*hold]struct{}),
		metas: make(map[*hold]string),
		kick:  make(chan struct{}, 1),
	}
}

func (w *watchdog) add(h *hold) {
	w.mu.Lock()
	w.holds[h] = struct{}{}
	w.mu.Unlock()
}

// claimSoon renews h at once: it was handed over with a short claim window.
func (w *watchdog) claimSoon(h *hold) {
	w.mu.Lock()
	w.claims = append(w.claims, h)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watchdog) remove(h *hold) {
	w.mu.Lock()
	delete(w.holds, h)
	delete(w.metas, h)
	w.mu.Unlock()
}

func (w *watchdog) setMeta(h *hold, s string) {
	w.mu.Lock()
	w.metas[h] = s
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watchdog) run() {
	defer w.c.wg.Done()
	t := time.NewTicker(w.c.opts.watchdog / 3)
	defer t.Stop()
	for {
		select {
		case <-w.c.closed:
			w.runCleanups(true)
			return
		case <-t.C:
			w.runCleanups(false)
			w.renew()
			for _, h := range w.c.hubs {
				h.sweep()
			}
		case <-w.kick:
			w.claimPending()
			w.runCleanups(false)
			w.flushMeta()
		}
	}
}

// batchesOf splits holds into script batches: at most maxBatch each, and
// one hash slot each on a cluster.
func (w *watchdog) batchesOf(hs []*hold) [][]*hold {
	var out [][]*hold
	if !w.c.cluster {
		for len(hs) > 0 {
			n := min(len(hs), maxBatch)
			out = append(out, hs[:n])
			hs = hs[n:]
		}
		return out
	}
	bySlot := make(map[int][]*hold)
	for _, h := range hs {
		s := keySlot(h.m.k.lock)
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

// claimPending renews the holds handed over since the last call.
func (w *watchdog) claimPending() {
	w.mu.Lock()
	hs := make([]*hold, 0, len(w.claims))
	for _, h := range w.claims {
		if _, ok := w.holds[h]; ok {
			hs = append(hs, h)
		}
	}
	w.claims = w.claims[:0]
	w.mu.Unlock()
	w.renewHolds(hs)
}

func (w *watchdog) renew() {
	w.mu.Lock()
	hs := make([]*hold, 0, len(w.holds))
	for h := range w.holds {
		hs = append(hs, h)
	}
	w.mu.Unlock()
	w.renewHolds(hs)
}

// renewHolds renews hs: one script per batch, all batches in one pipeline.
func (w *watchdog) renewHolds(hs []*hold) {
	c := w.c
	if len(hs) == 0 {
		return
	}
	batches := w.batchesOf(hs)
	calls := make([]scriptCall, len(batches))
	ttl := msCeil(c.opts.watchdog)
	for i, b := range batches {
		keys := make([]string, len(b))
		args := make([]any, 1, len(b)+1)
		args[0] = ttl
		for j, h := range b {
			keys[j] = h.m.k.lock
			args = append(args, h.field)
		}
		calls[i] = scriptCall{keys: keys, args: args}
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, c.opts.watchdog/3)
	defer cancel()
	sent := time.Now()
	var perMember [][]*redis.Cmd
	if c.isQuorum() {
		perMember = make([][]*redis.Cmd, len(c.members))
		c.fanout(func(i int, r redis.UniversalClient) error {
			perMember[i] = runPipelinedScripts(ctx, r, renewScript, calls)
			return nil
		})
	} else {
		perMember = [][]*redis.Cmd{runPipelinedScripts(ctx, c.rdb, renewScript, calls)}
	}
	took := time.Since(sent)
	n, need := len(perMember), 1
	if c.isQuorum() {
		need = c.need
	}
	for i, b := range batches {
		var batchErr error
		votes := make([]quorumVotes, len(b))
		for _, cmds := range perMember {
			vals, err := cmds[i].Int64Slice()
			if err == nil && len(vals) != len(b) {
				err = fmt.Errorf("lockmw: renewal returned %d results for %d locks", len(vals), len(b))
			}
			for j := range b {
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
		if batchErr != nil {
			c.log.Warn("lockmw: renewal failed", "locks", len(b), "err", batchErr)
			if cc, ok := c.rdb.(*redis.ClusterClient); ok {
				// A pipeline to a dead master does not refresh the slot
				// map by itself: ask for it, so the next renewal finds
				// the promoted replica.
				cc.ReloadState(ctx)
			}
		}
		var ev RenewalEvent
		if c.opts.hooks.Renewal != nil {
			ev = RenewalEvent{Locks: make([]RenewedLock, len(b)), Err: batchErr, Duration: took}
		}
		for j, h := range b {
			out := votes[j].outcome(n, need)
			switch out {
			case Renewed:
				h.renewed(sent)
			case RenewLost:
				if !h.releasing() {
					h.end(endLost, fmt.Errorf("%w: renewal found %q gone or someone else's", ErrLockLost, h.m.name))
				}
			}
			if ev.Locks != nil {
				ev.Locks[j] = RenewedLock{Name: h.m.name, Context: h.hookCtx, Outcome: out}
			}
		}
		if ev.Locks != nil {
			c.opts.hooks.Renewal(ev)
		}
	}
}

// flushMeta writes the metadata of new holds, conditioned on still holding.
func (w *watchdog) flushMeta() {
	c := w.c
	w.mu.Lock()
	metas := w.metas
	w.metas = make(map[*hold]string)
	w.mu.Unlock()
	if len(metas) == 0 {
		return
	}
	hs := make([]*hold, 0, len(metas))
	for h := range metas {
		hs = append(hs, h)
	}
	batches := w.batchesOf(hs)
	calls := make([]scriptCall, len(batches))
	for i, b := range batches {
		keys := make([]string, len(b))
		args := make([]any, 0, 2*len(b))
		for j, h := range b {
			keys[j] = h.m.k.lock
			args = append(args, h.field, metas[h])
		}
		calls[i] = scriptCall{keys: keys, args: args}
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, c.opts.releaseTimeout)
	defer cancel()
	write := func(r redis.UniversalClient) error {
		for _, cmd := range runPipelinedScripts(ctx, r, setMetaScript, calls) {
			if err := cmd.Err(); err != nil {
				c.log.Warn("lockmw: storing hold metadata failed", "err", err)
			}
		}
		return nil
	}
	if c.isQuorum() {
		c.fanout(func(_ int, r redis.UniversalClient) error { return write(r) })
	} else {
		_ = write(c.rdb)
	}
}
