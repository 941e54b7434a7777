package lockmw

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
)

// A read-write lock on a quorum Client (NewQuorum) holds its sides on
// majorities of the masters, each master deciding between them atomically:
// any write majority and any read majority share a master, where the two
// cannot both hold. Both sides are quorum mutexes, so everything but the
// gate between them is the quorum mutex's: the validity rule, split votes,
// renewal by a majority and the lost signal, reconciling the masters that
// answer late, a restarted master sitting out, and the write side's fencing
// tokens.
//
//   - The write side is the quorum mutex of the name. Its acquisition runs
//     only on a master where no reader's lock exists.
//   - Each read hold is a quorum mutex of its own, the owner field's
//     "{name}:rlock_reader:<field>" (layout.QuorumReader), so that readers
//     never contend; its acquisition runs only on a master where the write
//     side's lock does not exist, and registers the reader in the set
//     "{name}:rlock_readers" (layout.QuorumReaders) there, where the write
//     side's gate finds it. Both gates drop the readers whose lock is gone;
//     the set has no TTL, so it never expires under a live reader, and keeps
//     at most the readers released since the name's last acquisition.
//   - Every release publishes on one channel (the mutex keys of
//     "{name}:rlock_rw", layout.QuorumRW), and a message there wakes every
//     waiter of the name (keys.wakeAll): a writer's release lets all the
//     readers in. A quorum never queues: there is no hand-off and no
//     preference between the sides.
//
// The gate is in quorumacquire.lua. The writer takes the read side as on
// one Redis: a read hold of its own field beside its write hold (the
// reader's gate lets a reader in beside a write lock that holds its own
// field), which outlives an Unlock of the write side (a downgrade), while
// the write side's gate keeps every other writer out.

// quorumRW is a side of a quorum read-write lock: its kindOps.
type quorumRW struct {
	s       *rwSide
	q       *quorumStore
	w       *Mutex // the write side's quorum mutex (the writer's kindOps only)
	channel string // the unlock channel of both sides
	readers string // the readers' set, in the namespace
	wlock   string // the write side's lock key, in the namespace
}

// newQuorumRW makes the sides of rw, named and checked, a quorum read-write
// lock of q's.
func newQuorumRW(rw *RWMutex, q *quorumStore, fenced bool) {
	c, name := rw.w.c, rw.w.name
	k := newKeys(c.ns, layout.QuorumRW(name))
	k.wakeAll = true
	w := c.newMutex(name, lockOptions{fencing: fenced}, k.channel)
	w.of = &rw.w.lockBase
	readers := newKeys(c.ns, layout.QuorumReaders(name)).lock
	w.gate = []string{readers}
	for _, s := range []*rwSide{rw.r, rw.w} {
		s.k = k
		o := &quorumRW{s: s, q: q, channel: k.channel, readers: readers, wlock: w.k.lock}
		if s.kind == kindWrite {
			o.w = w
		}
		s.e = engine{&s.lockBase, o}
	}
}

// mutex is the quorum mutex of the side's hold of field: the write side's,
// or the reader's own.
func (o *quorumRW) mutex(field string) *Mutex {
	if o.w != nil {
		return o.w
	}
	c := o.s.c
	m := c.newMutex(layout.QuorumReader(o.s.name, field), lockOptions{}, o.channel)
	m.of = &o.s.lockBase
	m.gate = []string{o.wlock, o.readers}
	return m
}

// firstTry is try: a quorum has no fast path.
func (o *quorumRW) firstTry(ctx context.Context, a attempt) (acquireReply, error) {
	return o.try(ctx, a)
}

// try runs one attempt on the side's quorum mutex; a won reply names it
// (acquireReply.lk).
func (o *quorumRW) try(ctx context.Context, a attempt) (acquireReply, error) {
	m := o.mutex(a.field)
	r, err := o.q.tryAcquire(ctx, m, a)
	if err == nil && r.won {
		r.lk = &m.lockBase
	}
	return r, err
}

// claimOnce never succeeds: a quorum never hands a lock over.
func (o *quorumRW) claimOnce(context.Context, attempt) (int64, bool) { return 0, false }

// leaveOnce ends field's acquisitions of the side on every master.
func (o *quorumRW) leaveOnce(ctx context.Context, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	return o.q.leave(ctx, o.mutex(field), field, keep, ttl)
}

// reenter adds a level to the side's hold of outer, or gives the owner of
// outer's write hold the read side (enterAsWriter).
func (o *quorumRW) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if !outer.h.lk.of.same(&o.s.lockBase) {
		return o.enterAsWriter(ctx, outer.h)
	}
	return o.mutex(outer.h.field).reenter(ctx, outer)
}

// enterAsWriter gives the owner of the write hold wh the read side, as
// rwSide.enterAsWriter does on one Redis: a level more of the read hold it
// took before, else a new read hold of its field, the reader lock of that
// field, whose gate lets it in beside the write lock that holds the field.
// The read hold's context keeps ctx's values but ends with the caller's
// context of the write hold; a leased write hold gives it what is left of
// its lease.
func (o *quorumRW) enterAsWriter(ctx context.Context, wh *hold) (context.Context, error) {
	if wh.getState() != holdActive {
		return ctx, ErrLockLost
	}
	wh.readMu.Lock()
	defer wh.readMu.Unlock()
	if rh := wh.readHold; rh != nil && rh.getState() == holdActive {
		return o.mutex(rh.field).reenter(ctx, &rh.top)
	}
	c := o.s.c
	lease := wh.lease
	if lease > 0 {
		if lease = time.Until(wh.start.Add(wh.lease)); lease <= 0 {
			return ctx, fmt.Errorf("%w: %s %q: the write hold's lease is over", ErrLockLost, o.s.kind, o.s.name)
		}
	}
	a := attempt{field: wh.field, fieldArg: wh.field, ttl: lease}
	if a.ttl == 0 {
		a.ttl = c.opts.watchdog
	}
	m := o.mutex(wh.field)
	sent := time.Now()
	r, err := bounded(c, ctx, func(ctx context.Context) (acquireReply, error) {
		return o.q.tryAcquire(ctx, m, a)
	}, func(r acquireReply, _ error) {
		if r.won { // after the caller gave up: nobody will use it
			o.s.e.abandon(wh.field)
		}
	})
	switch {
	case err != nil:
		return ctx, withCtxErr(ctx, err)
	case !r.won:
		return ctx, r.busy(o.s.name)
	}
	hctx := o.s.startHold(valuesOf{Context: wh.hookCtx, vals: ctx}, a, lease, turn{base: sent, lk: &m.lockBase}, false)
	wh.readHold = o.s.findLevel(hctx).h
	return hctx, nil
}

// releaseOnce releases lvl of the side's hold, as its quorum mutex's
// Unlock does.
func (o *quorumRW) releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error) {
	return o.mutex(lvl.h.field).releaseOnce(ctx, lvl, expireMS, last)
}
