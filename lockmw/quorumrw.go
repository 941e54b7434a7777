package lockmw

import (
	"context"
	"errors"
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
// The gate is in quorumacquire.lua. A writer may not take the read side on
// a quorum (errQuorumWriterReads): its read hold would be a reader's lock the
// write side's own gate refuses.

// errQuorumWriterReads refuses the read side to a writer's hold context on a
// quorum Client.
var errQuorumWriterReads = fmt.Errorf("lockmw: on a quorum client a writer cannot take the read side of its read-write lock: %w", errors.ErrUnsupported)

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

// reenter adds a level to the side's hold of outer; the read side of a
// writer's hold is refused (errQuorumWriterReads).
func (o *quorumRW) reenter(ctx context.Context, outer *level) (context.Context, error) {
	if outer.h.lk.of != &o.s.lockBase && !outer.h.lk.of.same(&o.s.lockBase) {
		return ctx, fmt.Errorf("%w: %q", errQuorumWriterReads, o.s.name)
	}
	return o.mutex(outer.h.field).reenter(ctx, outer)
}

// releaseOnce releases lvl of the side's hold, as its quorum mutex's
// Unlock does.
func (o *quorumRW) releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error) {
	return o.mutex(lvl.h.field).releaseOnce(ctx, lvl, expireMS, last)
}
