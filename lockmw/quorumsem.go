package lockmw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
)

// A semaphore on a quorum Client (NewQuorum) is its permits, each a quorum
// mutex of its own: permit i of the semaphore name is the mutex
// "{name}:rlock_permit:<i>" (layout.QuorumPermit), and a holder takes the
// first free one, trying them one quorum round each from a random one on.
// It cannot over-grant: a permit is held by one hold at a time, as any
// quorum mutex (a majority of masters, any two of which share one), so at
// most N holds are alive at once whatever the masters answer. A majority of
// permits counted per master would not be: with 3 masters and 2 permits,
// A on {M1, M2}, B on {M2, M3} and C on {M1, M3} hold at once and no master
// sees more than 2 (docs/topologies.md).
//
// Everything else is the quorum mutex's: the validity rule, split votes,
// renewal by a majority and the lost signal, the reconciling of masters that
// answer late (a permit's hold is a mutex hold, its lockBase's of names the
// semaphore, which the hooks' events report). Its waiters wait for any
// permit: every permit's release publishes on one channel, that of the
// mutex keys of "{name}:rlock_permits" (layout.QuorumPermits), which wakes
// one waiter of each Client per master, and a woken waiter tries the
// permits again. A quorum never queues, so a permit is never handed over.

// quorumSem is a quorum semaphore's kindOps: its permits' mutexes on the
// Client's quorum store.
type quorumSem struct {
	s       *Semaphore
	q       *quorumStore
	permits []*Mutex
}

// newQuorumSem makes s, named and checked, a quorum semaphore of q's.
func newQuorumSem(s *Semaphore, q *quorumStore) *quorumSem {
	c := s.c
	s.k = newKeys(c.ns, layout.QuorumPermits(s.name))
	qs := &quorumSem{s: s, q: q}
	for i := range s.permits {
		m := c.newMutex(layout.QuorumPermit(s.name, i), lockOptions{}, s.k.channel)
		m.of = &s.lockBase
		qs.permits = append(qs.permits, m)
	}
	return qs
}

// firstTry is try: a quorum has no fast path.
func (o *quorumSem) firstTry(ctx context.Context, a attempt) (acquireReply, error) {
	return o.try(ctx, a)
}

// try runs one attempt on each permit in turn, from a random one on, until
// one is won (the reply names it: acquireReply.lk). Busy, it returns the
// busy reply of the permit that frees first (the shortest TTL); when no
// permit answered busy, the errors.
func (o *quorumSem) try(ctx context.Context, a attempt) (acquireReply, error) {
	n := len(o.permits)
	from := rand.IntN(n)
	var busy acquireReply
	answered := false
	var errs []error
	for j := range n {
		m := o.permits[(from+j)%n]
		r, err := o.q.tryAcquire(ctx, m, a)
		switch {
		case err != nil:
			errs = append(errs, err)
		case r.won:
			r.lk = &m.lockBase
			return r, nil
		case !answered || r.pttl < busy.pttl:
			busy, answered = r, true
		}
		if ctx.Err() != nil {
			break
		}
	}
	if answered {
		return busy, nil
	}
	return acquireReply{}, errors.Join(errs...)
}

// claimOnce never succeeds: a quorum never hands a permit over.
func (o *quorumSem) claimOnce(context.Context, attempt) (int64, bool) { return 0, false }

// leaveOnce ends field's acquisitions on every permit, with the one record
// of the masters that have not answered its won attempt (quorumStore's
// dirty fields: a field wins one permit).
func (o *quorumSem) leaveOnce(ctx context.Context, field string, _ bool, ttl time.Duration) (int64, bool, error) {
	dirty := o.q.takeDirty(field)
	var errs []error
	for _, m := range o.permits {
		if err := o.q.leaveDirty(ctx, m, field, ttl, dirty); err != nil {
			errs = append(errs, err)
		}
	}
	return 0, false, errors.Join(errs...)
}

// reenter is never called: a permit is not reentrant (lockBase.reentrant).
func (o *quorumSem) reenter(ctx context.Context, _ *level) (context.Context, error) {
	return ctx, fmt.Errorf("lockmw: semaphore %q: %w", o.s.name, errors.ErrUnsupported)
}

// releaseOnce releases the permit whose hold lvl is of, as that quorum
// mutex's Unlock does.
func (o *quorumSem) releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error) {
	for _, m := range o.permits {
		if lvl.h.lk.name == m.name { // the hold may be another Semaphore value's of the name (findLevel)
			return m.releaseOnce(ctx, lvl, expireMS, last)
		}
	}
	return releasedGone, nil
}

// available counts the permits no majority of masters holds.
func (o *quorumSem) available(ctx context.Context) (int, error) {
	free := 0
	for _, m := range o.permits {
		held, err := o.q.isLocked(ctx, m)
		if err != nil {
			return 0, fmt.Errorf("lockmw: available permits of %q: %w", o.s.name, err)
		}
		if !held {
			free++
		}
	}
	return free, nil
}
