package lockmw

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// MultiLock holds all of its locks or none: Redisson's RedissonMultiLock
// (getMultiLock). It is a [Locker], so the decorators take it
// (WithLock(ctx, c.MultiLock(a, b), fn)). Its members are any Lockers:
// mutexes, semaphores, the sides of a read-write lock, of this Client or of
// others (other Redis deployments, a quorum), in any cluster slots. The
// Client that made it reports it to its hooks (LockInfo.Kind "multilock");
// each member reports its own events to its own Client's hooks.
//
// # Taking it
//
// TryLock takes the members one at a time, in a fixed order (by name, then
// kind, then Client ID; not the order given), and never waits while it
// holds any: the first member is waited for with what is left of the wait,
// every other one gets a single attempt. When a member is busy, or its
// attempt fails, the members already taken are released and the next round
// starts by waiting for that member, holding nothing; the rest follow. So
// two multi-locks over overlapping sets, given in any order, on any
// deployments, never deadlock: nobody waits while holding. Over one
// deployment they take their common members in the same relative order: two
// over the same set queue on its first member instead of backing off. When the wait ends
// with a member busy, nothing is held and the error is that member's
// *[BusyError] (matching [ErrNotAcquired]).
//
// What waiters give up, against one lock: a multi-lock queues for one
// member at a time, so on the others it can be overtaken by any caller that
// comes while it waits elsewhere, and a member in steady demand can keep it
// backing off until its wait ends (Redisson's multi-lock instead waits for
// each member while holding the earlier ones, which deadlocks two of them
// until their waits end). Members taken in a round that fails are released
// at once, a few round trips of work for nothing and a hand-off to their
// next waiter. Consecutive back-offs pause a random while (at most 64 ms)
// before waiting again, which breaks the lock-step of two multi-locks that
// order their members differently (the same name on two deployments).
//
// # Holding it
//
// The hold context is cancelled when any member's hold ends without an
// Unlock: with that member's cause ([ErrLockLost], [ErrClosed]). It carries
// every member's hold, so passing it to a member (or to the multi-lock
// again) re-enters member-wise: a mutex member adds a level, a semaphore
// member takes another permit, as their own re-entries do. With a lease
// each member is taken with that lease, from its own acquisition; the hold
// context's deadline is the earliest member's lease end.
//
// Unlock releases every member, the last taken first.
//
// # Bad input
//
// [Client.MultiLock] panics on a nil member. An empty member list, the same
// lock twice (the same Client, name and kind; or the same Locker value), or
// a member whose Err reports an error can come from data: they make a
// MultiLock whose every call returns that error ([MultiLock.Err]).
//
// Members that are one name on one deployment reached through two Clients
// exclude each other: such a MultiLock is never taken (its wait ends with
// ErrNotAcquired).
type MultiLock struct {
	c       *Client
	members []Locker // in the order they are taken
	name    string
	group   string
	adapter string // the first member's WithAdapter
	err     error
}

// based is a lock of this package: every kind embeds lockBase.
type based interface{ base() *lockBase }

// MultiLock returns a lock that holds all of locks or none (see
// [MultiLock]); c's hooks report it. It panics when a member is nil (a nil
// Locker, or a nil pointer in one), with one line naming the member by its
// position, from 1: "lockmw: MultiLock: member 2 is nil".
func (c *Client) MultiLock(locks ...Locker) *MultiLock {
	for i, l := range locks {
		if isNil(l) {
			panic(fmt.Sprintf("lockmw: MultiLock: member %d is nil", i+1))
		}
	}
	m := &MultiLock{c: c, members: slices.Clone(locks)}
	slices.SortStableFunc(m.members, func(a, b Locker) int { return memberKeyOf(a).compare(memberKeyOf(b)) })
	names, groups := make([]string, len(m.members)), make([]string, len(m.members))
	grouped := false
	for i, l := range m.members {
		names[i], groups[i] = l.Name(), l.Name()
		if b, ok := l.(based); ok && b.base().group != "" {
			groups[i], grouped = b.base().group, true
		}
		if b, ok := l.(based); ok && m.adapter == "" {
			m.adapter = b.base().adapter
		}
	}
	m.name = "multi(" + strings.Join(names, ",") + ")"
	if grouped {
		m.group = "multi(" + strings.Join(groups, ",") + ")"
	}
	m.err = m.check(locks)
	return m
}

// isNil reports whether l is nil, or a nil pointer (or map, func, …) inside
// a Locker.
func isNil(l Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// check returns the error of a member list that data can produce: empty,
// the same lock twice, or a member that reports an error of its own.
func (m *MultiLock) check(given []Locker) error {
	if len(given) == 0 {
		return fmt.Errorf("%w: MultiLock: no members", ErrInvalidArgument)
	}
	for i, l := range given {
		if e, ok := l.(interface{ Err() error }); ok && e.Err() != nil {
			return fmt.Errorf("lockmw: MultiLock: member %d: %w", i+1, e.Err())
		}
		for j := range i {
			if sameLocker(given[j], l) {
				return fmt.Errorf("%w: MultiLock: members %d and %d are the same lock %q", ErrInvalidArgument, j+1, i+1, l.Name())
			}
		}
	}
	return nil
}

// sameLocker reports whether a and b are one lock: for this package's
// kinds the same Client, name and kind; for others the same value.
func sameLocker(a, b Locker) bool {
	ba, okA := a.(based)
	bb, okB := b.(based)
	if okA && okB {
		return ba.base().same(bb.base())
	}
	if okA != okB || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// memberKey orders the members: by name, then kind, then Client ID (a
// Locker of another package has neither).
type memberKey struct{ name, kind, client string }

func memberKeyOf(l Locker) memberKey {
	k := memberKey{name: l.Name()}
	if b, ok := l.(based); ok {
		k.kind, k.client = b.base().kind.String(), b.base().c.id
	}
	return k
}

func (k memberKey) compare(o memberKey) int {
	return cmp.Or(strings.Compare(k.name, o.name), strings.Compare(k.kind, o.kind), strings.Compare(k.client, o.client))
}

// Name returns "multi(<member names>)": the members' names, in the order
// they are taken, joined by commas. It is no Redis key. The hooks report it
// as the name, and as the group, when any member has a group ([WithGroup]),
// "multi(<each member's group, or name>)": give per-entity members a group
// and the multi-lock's metrics stay bounded.
func (m *MultiLock) Name() string { return m.name }

// Err returns the error every call returns (see "Bad input" on
// [MultiLock]): matching [ErrInvalidArgument] for no members or the same
// lock twice, or a member's own error (such as [ErrInvalidName]); nil when
// the MultiLock can be used.
func (m *MultiLock) Err() error { return m.err }

// Lock waits until it holds every member or ctx ends; it is
// TryLock(ctx, Forever, 0).
func (m *MultiLock) Lock(ctx context.Context) (context.Context, error) {
	return m.TryLock(ctx, Forever, 0)
}

// TryLock takes every member (see [MultiLock] for how), waiting at most wait
// in all: 0 gives each member a single attempt, Forever waits until ctx
// ends. lease is each member's (0: renewed by its Client's watchdog).
//
// On success it returns the hold context, which Unlock takes. On failure
// nothing is held, and the error is the failing member's (see
// [Mutex.TryLock]), naming it: a *[BusyError] (matching [ErrNotAcquired])
// when a member stayed busy until the wait ended, joined with ctx's error
// when ctx ended first; ErrClosed when c or a member's Client is closed;
// ErrInvalidArgument for a negative wait or lease, or [MultiLock.Err].
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	switch {
	case m.err != nil:
		return ctx, m.err
	case wait < 0:
		return ctx, fmt.Errorf("%w: negative wait %v", ErrInvalidArgument, wait)
	case lease < 0:
		return ctx, fmt.Errorf("%w: negative lease %v", ErrInvalidArgument, lease)
	case m.c.isClosed():
		return ctx, ErrClosed
	}
	hooks := &m.c.opts.hooks
	if hooks.AcquireStart == nil && hooks.AcquireEnd == nil {
		var ev *AcquireEndEvent // HoldStart's Waited is learnt in it
		if hooks.HoldStart != nil {
			ev = &AcquireEndEvent{}
		}
		return m.acquire(ctx, wait, lease, ev)
	}
	reentrant := m.findHold(ctx) != nil
	start := time.Now()
	actx := ctx
	if hooks.AcquireStart != nil {
		if x := hooks.AcquireStart(ctx, AcquireStartEvent{LockInfo: m.info(), Reentrant: reentrant, Wait: wait, Lease: lease}); x != nil {
			actx = x
		}
	}
	ev := AcquireEndEvent{LockInfo: m.info(), Reentrant: reentrant}
	hctx, err := m.acquire(ctx, wait, lease, &ev)
	if hooks.AcquireEnd != nil {
		ev.Duration, ev.Err, ev.Outcome = time.Since(start), err, outcomeOf(err)
		hooks.AcquireEnd(actx, ev)
	}
	return hctx, err
}

// info is the multi-lock as the hooks' events name it.
func (m *MultiLock) info() LockInfo {
	return LockInfo{Name: m.name, Group: m.group, Kind: kindMultiLock.String(), Adapter: m.adapter}
}

// client is the Client whose hooks report the multi-lock and whose end
// stops WithReleaseRetry.
func (m *MultiLock) client() *Client { return m.c }
