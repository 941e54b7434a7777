package lockmw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Forever, as the wait of TryLock, waits until the lock is acquired or the
// context ends.
const Forever time.Duration = math.MaxInt64

// Mutex is a reentrant distributed lock on one name, Redisson's RLock. It is
// safe for concurrent use and cheap to create; mutexes of one Client and name
// are interchangeable. Ownership is not a goroutine but a context: Lock returns
// a hold context, and the hold belongs to whoever has that context (or one
// derived from it). See the package documentation.
type Mutex struct {
	c      *Client
	name   string
	k      keys
	fenced bool
	err    error    // ErrInvalidName, returned by every call
	akeys  []string // the acquire script's keys

	keyArgs []any         // akeys, boxed once for the acquire and release command lines
	hot     *atomic.Int64 // the name's group in the Client's contention memory
}

// Mutex returns the lock called name. It never panics: a name that cannot be
// used (see ErrInvalidName) gives a Mutex whose every call returns that error.
func (c *Client) Mutex(name string, opts ...MutexOption) *Mutex {
	var o mutexOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	m := &Mutex{c: c, name: name, fenced: o.fencing}
	if err := validateName(name, c.cluster); err != nil {
		m.err = err
		return m
	}
	m.k = newKeys(name)
	m.akeys = []string{m.k.lock, m.k.channel, m.k.queue, m.k.waiters, m.k.token}
	m.keyArgs = []any{m.akeys[0], m.akeys[1], m.akeys[2], m.akeys[3], m.akeys[4]}
	m.hot = c.contention.slot(name)
	return m
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.name }

// Err returns the error every call on the mutex returns when its name cannot
// be used (matching ErrInvalidName), or nil. It checks the name without a
// round trip.
func (m *Mutex) Err() error { return m.err }

// Lock waits until it holds the lock or ctx ends; it is TryLock(ctx, Forever, 0).
func (m *Mutex) Lock(ctx context.Context) (context.Context, error) {
	return m.TryLock(ctx, Forever, 0)
}

// TryLock acquires the lock, waiting at most wait for a busy lock: 0 is a
// single attempt, Forever waits until ctx ends. With lease == 0 the lock's
// TTL is the watchdog timeout and the watchdog renews it every third of that
// until the last Unlock; with lease > 0 the TTL is lease and nothing renews
// it.
//
// On success it returns the hold context: derived from ctx, carrying the hold,
// cancelled when the hold ends (see the package documentation for each cause),
// and with a deadline at the lease end when leased. Passing that context (or
// one derived from it) to TryLock or Lock of a mutex of the same Client and
// name re-enters: the count in Redis goes up, nothing waits, and the outer
// hold's regime (watchdog or lease end) is kept whatever wait and lease say.
//
// The hold context inherits ctx's deadline and cancellation: bound the wait
// with wait, not with a deadline on ctx, when the hold must outlive it.
//
// On failure it returns ctx and an error: a *BusyError (matching
// ErrNotAcquired) when the lock stayed busy for the whole wait, joined with
// ctx's error when ctx ended first; ErrClosed after Close; ErrInvalidName or
// ErrInvalidArgument for bad input; or the Redis error. Nothing is left
// held when it fails: an attempt whose outcome is unknown (a lost reply, a
// waiter leaving as the lock is handed to it) is undone in the background, so
// TryLock returns when ctx ends even if Redis does not answer.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if m.err != nil {
		return ctx, m.err
	}
	if wait < 0 {
		return ctx, fmt.Errorf("%w: negative wait %v", ErrInvalidArgument, wait)
	}
	if lease < 0 {
		return ctx, fmt.Errorf("%w: negative lease %v", ErrInvalidArgument, lease)
	}
	c := m.c
	if c.isClosed() {
		return ctx, ErrClosed
	}
	lease = min(lease, time.Duration(maxTTLms)*time.Millisecond) // "forever" is 100 years
	outer := m.findLevel(ctx)
	hooks := &c.opts.hooks
	if hooks.AcquireStart == nil && hooks.AcquireEnd == nil {
		if outer != nil {
			return m.reenter(ctx, outer)
		}
		return m.acquire(ctx, wait, lease, nil)
	}

	start := time.Now()
	actx := ctx
	if hooks.AcquireStart != nil {
		if x := hooks.AcquireStart(ctx, AcquireStartEvent{Name: m.name, Reentrant: outer != nil, Wait: wait, Lease: lease}); x != nil {
			actx = x
		}
	}
	ev := AcquireEndEvent{Name: m.name, Reentrant: outer != nil}
	var hctx context.Context
	var err error
	if outer != nil {
		hctx, err = m.reenter(ctx, outer)
	} else {
		hctx, err = m.acquire(ctx, wait, lease, &ev)
	}
	if hooks.AcquireEnd != nil {
		ev.Duration = time.Since(start)
		ev.Err = err
		ev.Outcome = outcomeOf(err)
		if err == nil {
			ev.Token, _ = m.Token(hctx)
		}
		hooks.AcquireEnd(actx, ev)
	}
	return hctx, err
}

func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Acquired
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		return Canceled
	case errors.Is(err, ErrNotAcquired), errors.Is(err, context.DeadlineExceeded):
		return TimedOut
	default:
		return Failed
	}
}

// reenter adds a level to the hold that outer belongs to.
func (m *Mutex) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, errors.Join(ErrNotAcquired, err)
	}
	c, h := m.c, outer.h
	if h.getState() == holdLost {
		return ctx, ErrLockLost
	}
	var n int64
	var err error
	reqID := c.requestID()
	if c.isQuorum() {
		n, err = m.reenterQuorum(ctx, h, reqID)
	} else {
		n, err = reenterScript.Run(ctx, c.rdb, []string{m.k.lock, m.k.latchBase + reqID}, h.field, c.latchArg).Int64()
	}
	if err != nil {
		// The script may have run without our hearing of it: undo it in
		// the background, or the hold would keep a level nobody can unlock.
		c.wd.undoReentry(m, h.field, reqID)
		return ctx, withCtxErr(ctx, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err))
	}
	switch {
	case n == -2: // undone by an earlier, abandoned try of this very request
		return ctx, fmt.Errorf("lockmw: re-enter %q: abandoned", m.name)
	case n < 0:
		h.end(endLost, fmt.Errorf("%w: %q was gone when re-entered", ErrLockLost, m.name))
		return ctx, ErrLockLost
	}
	h.addLevels(1)
	lctx, cancel := context.WithCancelCause(ctx)
	lvl := &level{h: h, parent: topLevel(ctx), cancel: cancel}
	return context.WithValue(lctx, levelKey{}, lvl), nil
}

// acquireReply is the acquire script's answer.
type acquireReply struct {
	won    bool
	token  int64
	pttl   time.Duration
	holder string
	meta   string
}

func (r *acquireReply) busy(name string) *BusyError {
	return &BusyError{Name: name, TTL: r.pttl, Holder: r.holder, Metadata: r.meta}
}

// try runs the acquire script once for field. enqueue joins the waiter queue
// when busy; queued says an earlier attempt may have joined it.
func (m *Mutex) try(ctx context.Context, field string, fieldArg any, ttl time.Duration, enqueue, queued bool) (acquireReply, error) {
	c := m.c
	if c.isQuorum() {
		return m.tryQuorum(ctx, field, ttl)
	}
	args := append(make([]any, 0, 15), "evalsha", acquireSHA, len(m.keyArgs))
	args = append(args, m.keyArgs...)
	args = append(args, c.ttlArg(ttl), fieldArg, flag(enqueue), c.graceArg, flag(m.fenced), flag(queued), c.claimArg(ttl))
	res, err := runScript(ctx, c.rdb, acquireSrc, args).Slice()
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire %q: %w", m.name, err)
	}
	r, err := parseAcquire(res)
	if err != nil {
		return r, fmt.Errorf("lockmw: acquire %q: %w", m.name, err)
	}
	return r, nil
}

// Script arguments boxed once: a flag or a number passed as an interface
// value would otherwise allocate on every call.
var argTrue, argFalse any = "1", "0"

func flag(b bool) any {
	if b {
		return argTrue
	}
	return argFalse
}

// claimWindow is how long a lock handed to a waiter of this TTL waits for its
// client to claim it (claim.lua gives it the full TTL): a tenth of the TTL,
// at least 200ms. A waiter that died just before its turn blocks the name
// that long instead of a whole TTL.
func claimWindow(ttl time.Duration) int64 {
	return min(msCeil(ttl), max(msCeil(ttl/10), 200))
}

// ttlArg is the script argument for ttl in ms; the watchdog timeout's is
// boxed once per Client.
func (c *Client) ttlArg(ttl time.Duration) any {
	if ttl == c.opts.watchdog {
		return c.watchdogArg
	}
	return msCeil(ttl)
}

// claimArg is the script argument for claimWindow(ttl); the watchdog
// timeout's is boxed once per Client.
func (c *Client) claimArg(ttl time.Duration) any {
	if ttl == c.opts.watchdog {
		return c.claimWDArg
	}
	return claimWindow(ttl)
}

func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// acquire runs a new acquisition: one attempt, then the wait.
func (m *Mutex) acquire(ctx context.Context, wait, lease time.Duration, ev *AcquireEndEvent) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, errors.Join(ErrNotAcquired, err)
	}
	c := m.c
	field := c.id + ":" + formatUint(c.ownerSeq.Add(1))
	fieldArg := any(field)
	ttl := lease
	if ttl == 0 {
		ttl = c.opts.watchdog
	}
	sent := time.Now()
	r, err := m.firstTry(ctx, field, fieldArg, ttl, wait > 0)
	if err != nil {
		m.abandon(ctx, field)
		if ctxErr(ctx) != nil { // ctx ended the attempt: not acquired, as a wait that ctx ends
			return ctx, errors.Join(ErrNotAcquired, withCtxErr(ctx, err))
		}
		return ctx, err
	}
	if r.won {
		if err := m.syncReplicas(ctx, field); err != nil {
			return ctx, err
		}
		return m.startHold(ctx, field, fieldArg, r.token, lease, sent, false, time.Time{}), nil
	}
	m.c.contention.seen(m.hot)
	if ev != nil {
		ev.Waited, ev.Holder, ev.HolderMetadata = true, r.holder, r.meta
	}
	if wait == 0 {
		return ctx, r.busy(m.name)
	}
	var claimBy time.Time
	token, base, err := m.waitTurn(ctx, field, fieldArg, ttl, lease, wait, r, sent, ev, &claimBy)
	if err != nil {
		return ctx, err
	}
	if err := m.syncReplicas(ctx, field); err != nil {
		return ctx, err
	}
	return m.startHold(ctx, field, fieldArg, token, lease, base, true, claimBy), nil
}

// waitTurn waits, queued in Redis, until the lock is handed to field or a
// retry wins it. It returns the token and the earliest time the lock's TTL
// may have been set.
//
// A lock handed over arrives with only a claim window (claimWindow) of TTL.
// A watchdog hold with most of that window left is returned at once, with
// *claimBy set to the window's end: the watchdog claims it in the background
// and the hold is lost if that fails. Otherwise (a lease, or a window mostly
// gone) the claim is made before returning.
func (m *Mutex) waitTurn(ctx context.Context, field string, fieldArg any, ttl, lease, wait time.Duration, r acquireReply, sent time.Time, ev *AcquireEndEvent, claimBy *time.Time) (int64, time.Time, error) {
	c := m.c
	var deadline <-chan time.Time
	if wait != Forever {
		t := time.NewTimer(time.Until(sent.Add(wait)))
		defer t.Stop()
		deadline = t.C
	}
	w := newWaiter(field)
	confirmed := true
	var ready []<-chan struct{}
	for _, hb := range c.hubs {
		ns, ok, rc, err := hb.join(ctx, m, w, sent)
		if err != nil {
			m.abandon(ctx, field)
			return 0, time.Time{}, withCtxErr(ctx, fmt.Errorf("lockmw: subscribe for %q: %w", m.name, err))
		}
		defer hb.leave(ns, w)
		if !ok {
			confirmed = false
		}
		if rc != nil {
			ready = append(ready, rc)
		}
	}

	giveUp := func(cause error, keep bool) (int64, time.Time, error) {
		if !keep {
			m.abandon(ctx, field)
			return 0, time.Time{}, cause
		}
		s := time.Now()
		tok, ok, err := m.leaveQueue(ctx, field, true, ttl)
		if ok {
			return tok, s, nil // leave.lua gave it its full TTL
		}
		if err != nil {
			m.abandon(ctx, field) // try again in the background
		}
		return 0, time.Time{}, cause
	}
	var lastErr error         // the last attempt's error, while Redis fails
	var backoff time.Duration // between attempts that fail
	busyErr := func() error {
		if lastErr != nil {
			return errors.Join(r.busy(m.name), lastErr)
		}
		return r.busy(m.name)
	}
	lastBusy := sent // a hand-off cannot be earlier than this
	// claim takes over a lock handed to us; false when the claim window
	// passed (we go on waiting) or Redis failed (the next attempt claims it).
	claim := func(ho handoff) (int64, time.Time, bool) {
		window := time.Duration(claimWindow(ttl)) * time.Millisecond
		if by := c.expiryBound(lastBusy, window); lease == 0 && time.Until(by) > window/2 {
			if ev != nil && ho.holder != "" {
				ev.Holder, ev.HolderMetadata = ho.holder, ho.meta
			}
			*claimBy = by
			return ho.token, lastBusy, true
		}
		s := time.Now()
		res, err := claimScript.Run(ctx, c.rdb, []string{m.k.lock}, field, c.ttlArg(ttl)).Slice()
		if err != nil || len(res) < 2 || asInt(res[0]) != 1 {
			return 0, time.Time{}, false
		}
		if ev != nil && ho.holder != "" {
			ev.Holder, ev.HolderMetadata = ho.holder, ho.meta
		}
		return asInt(res[1]), s, true
	}

	// A new subscription: wait for the server to confirm it, then try once
	// more, for the lock may have been freed before it was in place.
	retryNow := !confirmed
	for _, rc := range ready {
		select {
		case <-rc:
		case ho := <-w.handed:
			if tok, base, ok := claim(ho); ok {
				return tok, base, nil
			}
		case <-ctx.Done():
			return giveUp(errors.Join(busyErr(), context.Cause(ctx)), false)
		case <-c.closed:
			return giveUp(fmt.Errorf("%w while waiting for %q", ErrClosed, m.name), false)
		case <-deadline:
			return giveUp(busyErr(), true)
		}
	}

	sleepCap := max(ttl/3, time.Millisecond)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if !retryNow {
			sleep := sleepCap
			if r.pttl >= 0 && r.pttl < sleep {
				sleep = r.pttl
			}
			if backoff > 0 {
				sleep = backoff
			}
			timer.Reset(sleep)
			select {
			case ho := <-w.handed:
				if tok, base, ok := claim(ho); ok {
					return tok, base, nil
				}
			case <-w.wake:
			case <-timer.C:
			case <-ctx.Done():
				return giveUp(errors.Join(busyErr(), context.Cause(ctx)), false)
			case <-c.closed:
				return giveUp(fmt.Errorf("%w while waiting for %q", ErrClosed, m.name), false)
			case <-deadline:
				return giveUp(busyErr(), true)
			}
			timer.Stop()
		}
		retryNow = false
		s := time.Now()
		r2, err := m.try(ctx, field, fieldArg, ttl, true, true)
		if err != nil {
			if ctx.Err() != nil {
				return giveUp(errors.Join(busyErr(), err, context.Cause(ctx)), false)
			}
			// Redis failing while we wait (a fail-over, a restart, a
			// moved slot): go on waiting, retrying with back-off, until
			// the wait or ctx ends. The queue entry is refreshed by the
			// next attempt that gets through.
			lastErr = err
			backoff = min(max(2*backoff, 20*time.Millisecond), sleepCap)
			c.log.Debug("lockmw: retrying after an error while waiting", "name", m.name, "err", err)
			continue
		}
		lastErr, backoff = nil, 0
		if r2.won { // fresh, or claimed a hand-off: the TTL was set by this request
			return r2.token, s, nil
		}
		lastBusy, r = s, r2
		if ev != nil {
			ev.Holder, ev.HolderMetadata = r.holder, r.meta
		}
	}
}

// leaveQueue takes field out of the queue. When the lock was handed to it
// meanwhile, it keeps it (keep) and reports the token, or passes it on.
func (m *Mutex) leaveQueue(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	c := m.c
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.releaseTimeout)
	defer cancel()
	if c.isQuorum() {
		errs := c.fanout(func(i int, r redis.UniversalClient) error {
			return leaveScript.Run(lctx, r, m.fullKeys("leave"), field, "publish", argFalse, c.ttlArg(ttl)).Err()
		})
		return 0, false, errors.Join(errs...)
	}
	res, err := leaveScript.Run(lctx, c.rdb, m.fullKeys("leave"), field, c.publishCmd(lctx), flag(keep), c.ttlArg(ttl)).Slice()
	if err != nil {
		c.log.Warn("lockmw: leaving the wait queue failed", "name", m.name, "field", field, "err", err)
		return 0, false, err
	}
	if len(res) >= 2 && asInt(res[0]) == 1 {
		return asInt(res[1]), true, nil
	}
	return 0, false, nil
}

// abandon undoes an acquisition that failed or gave up: it takes field out
// of the queue and releases the lock if field got it after all (a reply that
// was lost, a hand-off that came as the waiter left). It runs on the
// watchdog goroutine, so that the caller returns on time even when Redis
// does not answer.
func (m *Mutex) abandon(_ context.Context, field string) {
	m.c.wd.abandon(m, field)
}

func (m *Mutex) fullKeys(reqID string) []string {
	return []string{m.k.lock, m.k.channel, m.k.queue, m.k.waiters, m.k.token, m.k.latchBase + reqID, m.k.handoff}
}

// startHold creates the hold of a new acquisition whose TTL was set no
// earlier than base.
// A non-zero claimBy says the hold was handed over and not claimed yet: it is
// lost then unless the watchdog's claim succeeds first.
func (m *Mutex) startHold(ctx context.Context, field string, fieldArg any, token int64, lease time.Duration, base time.Time, waited bool, claimBy time.Time) context.Context {
	c := m.c
	h := &hold{m: m, field: field, fieldArg: fieldArg, token: token, lease: lease, start: time.Now(), levels: 1}
	h.hookCtx = ctx
	if f := c.opts.hooks.HoldStart; f != nil {
		if x := f(ctx, HoldStartEvent{Name: m.name, Field: field, Token: token, Lease: lease, Waited: waited}); x != nil {
			h.hookCtx = x
		}
	}
	hctx, cancel := context.WithCancelCause(h.hookCtx)
	h.cancel = cancel
	if lease > 0 {
		hctx, h.stopDL = context.WithDeadline(hctx, c.expiryBound(base, lease))
	}
	hctx = context.WithValue(hctx, levelKey{}, &level{h: h, parent: topLevel(ctx)})
	c.addHold(h)
	if lease == 0 {
		lossAt := c.expiryBound(base, c.opts.watchdog)
		if !claimBy.IsZero() {
			lossAt = claimBy
		}
		h.mu.Lock()
		h.lossTime = time.AfterFunc(time.Until(lossAt), func() {
			h.end(endLost, fmt.Errorf("%w: renewals of %q failed until the key could have expired", ErrLockLost, m.name))
		})
		h.mu.Unlock()
		c.wd.add(h)
		if !claimBy.IsZero() {
			c.wd.claimSoon(h)
		}
	}
	if f := c.opts.hooks.Metadata; f != nil {
		if s := f(h.hookCtx, m.name); s != "" && len(s) <= MaxMetadataLen {
			c.wd.setMeta(h, s)
		}
	}
	if c.isClosed() { // Close ran while we acquired
		h.end(endClosed, ErrClosed)
	}
	return hctx
}

// Unlock releases the level of the lock that ctx was returned for (by Lock or
// TryLock, or any context derived from that one). The last level deletes the
// key, hands the lock to the next queued waiter (or publishes Redisson's
// unlock message), stops renewal and cancels the hold context.
//
// It works with a cancelled ctx: it takes the owner from ctx and runs the
// release detached from ctx, bounded by the release timeout. It returns
// ErrNotHeld when ctx holds no unreleased level of this lock, ErrLockLost when
// the hold was lost (then nothing in Redis is touched) or when Redis no longer
// has it, or the Redis error. After a Redis error the level stays held and
// Unlock may be called again (a retry cannot count twice); if it was the
// owner's last level, renewal stops and the hold context ends, so that the
// lock expires within the watchdog timeout even without a retry.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.release(ctx, 0)
}

// UnlockAt gives the lock up at at: renewal stops now and the key expires at
// at (at once when at has passed). On an inner re-entry level it is a plain
// Unlock. The hold context is cancelled now, and the lock stays owned until it
// expires: even this Client cannot take it again before.
func (m *Mutex) UnlockAt(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return m.release(ctx, 0)
	}
	return m.release(ctx, msCeil(d))
}

func (m *Mutex) release(ctx context.Context, expireMS int64) error {
	if m.err != nil {
		return m.err
	}
	lvl := m.findLevel(ctx)
	if lvl == nil {
		return ErrNotHeld
	}
	lvl.mu.Lock()
	defer lvl.mu.Unlock()
	if lvl.released {
		return ErrNotHeld
	}
	h, c := lvl.h, m.c
	if h.getState() == holdLost {
		lvl.released = true
		lvl.cancelLevel(ErrLockLost)
		return ErrLockLost
	}
	if lvl.reqID == "" {
		lvl.reqID = c.requestID()
		lvl.latchArg = m.k.latchBase + lvl.reqID
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.releaseTimeout)
	defer cancel()
	h.beginRelease()
	defer h.endRelease()
	var n int64
	var err error
	// The local count of levels decides the last one: Redis may count one
	// more while a re-entry whose reply was lost waits to be undone.
	last := h.addLevels(0) == 1
	if c.isQuorum() {
		n, err = m.releaseQuorum(rctx, h, lvl.reqID, expireMS, last)
	} else {
		n, err = m.releaseOne(rctx, h, lvl, expireMS, last)
	}
	if err != nil {
		if h.addLevels(0) == 1 {
			// The owner's last level: stop renewing, so that the lock
			// expires within the watchdog timeout even if Unlock is never
			// called again. A retry still releases it at once.
			h.end(endReleased, nil)
		}
		return withCtxErr(rctx, fmt.Errorf("lockmw: unlock %q: %w", m.name, err))
	}
	lvl.released = true
	h.addLevels(-1)
	switch n {
	case 0: // other levels remain
		lvl.cancelLevel(nil)
		return nil
	case 1, 2:
		h.end(endReleased, nil)
		lvl.cancelLevel(nil)
		return nil
	default:
		cause := fmt.Errorf("%w: %q was gone or someone else's at unlock", ErrLockLost, m.name)
		h.end(endLost, cause)
		lvl.cancelLevel(cause)
		return cause
	}
}

// releaseOne runs the release on a single Redis: the short script first for
// an uncontended last level (see fastRelease), release.lua otherwise.
func (m *Mutex) releaseOne(ctx context.Context, h *hold, lvl *level, expireMS int64, last bool) (int64, error) {
	c := m.c
	if expireMS == 0 && last && !c.contention.recent(m.hot) {
		done, err := m.fastRelease(ctx, h, lvl)
		if err != nil {
			return 0, err
		}
		if done {
			return 1, nil
		}
	}
	args := append(make([]any, 0, 17), "evalsha", releaseSHA, len(m.keyArgs)+2)
	args = append(args, m.keyArgs...)
	args = append(args, lvl.latchArg, m.k.handoff, h.fieldArg, c.publishArg(ctx), c.latchArg, expireArg(expireMS), flag(last))
	return runScript(ctx, c.rdb, releaseSrc, args).Int64()
}

// expireArg boxes UnlockAt's expiry for the release script; 0 (release
// now) without an allocation.
func expireArg(ms int64) any {
	if ms == 0 {
		return argFalse
	}
	return ms
}

func (l *level) cancelLevel(cause error) {
	if l.cancel != nil {
		l.cancel(cause)
	}
}

// ForceUnlock deletes the lock whoever holds it, hands it to the next queued
// waiter (or publishes Redisson's unlock message) and reports whether a lock
// existed. A holder renewed by the watchdog learns of it at its next renewal:
// its hold context is cancelled with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	c := m.c
	if c.isQuorum() {
		vals, err := quorumRead(c, func(r redis.UniversalClient) (int64, error) {
			return forceUnlockScript.Run(ctx, r, m.fullKeys("force"), "publish").Int64()
		})
		return slices.Contains(vals, 1), withCtxErr(ctx, err)
	}
	n, err := forceUnlockScript.Run(ctx, c.rdb, m.fullKeys("force"), c.publishCmd(ctx)).Int64()
	if err != nil {
		return false, withCtxErr(ctx, fmt.Errorf("lockmw: force unlock %q: %w", m.name, err))
	}
	return n == 1, nil
}

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	if c := m.c; c.isQuorum() {
		vals, err := quorumRead(c, func(r redis.UniversalClient) (int64, error) { return r.Exists(ctx, m.k.lock).Result() })
		return kthLargest(vals, c.need) == 1, withCtxErr(ctx, err)
	}
	n, err := m.c.rdb.Exists(ctx, m.k.lock).Result()
	return n == 1, withCtxErr(ctx, err)
}

// IsHeld reports whether the owner carried by ctx holds the lock in Redis;
// false when ctx carries no hold of it.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many levels the owner carried by ctx holds, as Redis
// counts them; 0 when ctx carries no hold of the lock.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	lvl := m.findLevel(ctx)
	if lvl == nil {
		return 0, nil
	}
	read := func(r redis.UniversalClient) (int64, error) {
		n, err := r.HGet(ctx, m.k.lock, lvl.h.field).Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	}
	if c := m.c; c.isQuorum() {
		vals, err := quorumRead(c, read)
		return int(kthLargest(vals, c.need)), withCtxErr(ctx, err)
	}
	n, err := read(m.c.rdb)
	return int(n), withCtxErr(ctx, err)
}

// TTL returns the lock's remaining time to live: 0 when it is not locked, -1
// when the key has no expiry (set by a foreign client).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if m.err != nil {
		return 0, m.err
	}
	if c := m.c; c.isQuorum() {
		vals, err := quorumRead(c, func(r redis.UniversalClient) (time.Duration, error) {
			d, err := r.PTTL(ctx, m.k.lock).Result()
			if d == -2 {
				d = 0
			}
			return d, err
		})
		return kthLargest(vals, c.need), withCtxErr(ctx, err)
	}
	d, err := m.c.rdb.PTTL(ctx, m.k.lock).Result()
	if err != nil {
		return 0, withCtxErr(ctx, err)
	}
	switch d {
	case -2: // no key
		return 0, nil
	case -1: // no expiry
		return -1, nil
	}
	return d, nil
}

// Token returns the fencing token of the hold ctx carries of this lock, with
// no round trip; false when ctx carries none or the mutex was made without
// WithFencing. A re-entry has the token of the hold it re-entered.
func (m *Mutex) Token(ctx context.Context) (int64, bool) {
	if m.err != nil || !m.fenced {
		return 0, false
	}
	lvl := m.findLevel(ctx)
	if lvl == nil || lvl.h.token == 0 {
		return 0, false
	}
	return lvl.h.token, true
}
