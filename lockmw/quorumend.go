package lockmw

import (
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// Reconciling the masters a quorum operation did not wait for.
//
// A request that a master has not answered when the operation decides may
// run there at any later time — when a paused master resumes it runs what
// its connections buffered, in no fixed order across connections — and so
// may a request whose read timed out. Ordering such a master's requests by
// waiting for replies cannot work (a timed-out request has no reply, and two
// connections' requests run in either order), so what they do is made not
// to depend on the order:
//
//   - every acquisition attempt has a number (quorumStore.tries), which a win
//     writes into the hash ("rlock:try");
//   - undoing attempts up to k of a field on a master (quorumend.lua) frees
//     the lock there only if one of them holds it and, where a request of
//     them may still run, raises the field's end latch
//     (redisson_unlock_latch:{name}:end:<nonce>:<field>) to k, so that an
//     acquire request of those attempts that runs later takes nothing
//     (quorumacquire.lua);
//   - the end of a hold (its last Unlock, or giving up a wait) raises the
//     latch to every attempt, and renewals, re-entries and fences only touch
//     a field that is there.
//
// Whatever the order in which a master runs a field's requests, a late
// acquisition is undone when its attempt failed or its hold ended, and is
// renewed and released with the hold while it lives. The latch is written
// only on masters that have not answered one of the field's acquisitions
// (dirtyFields), so a quorum of healthy masters writes none; it lives for the
// hold's TTL, at least the latch TTL that covers go-redis re-sending a
// request (latchTTL), counted from when the master runs it: a master paused
// for an hour runs the end together with the acquisition it buffered.
//
// An end that fails on a master is sent again in the background (a member's
// redoQueue) until the master answers or the end no longer matters (the TTL
// it guards has passed), so that a late or reset master does not keep a
// name it was asked to free.

// endAll is the attempt number that ends every attempt of a field: the
// hold's end. 2^53-1, the largest integer a Lua number holds exactly.
const endAll = int64(1<<53 - 1)

// endReqID names the end latch of field among the latches of its name:
// unique to this Client value (its nonce) and never a request ID.
func (q *quorumStore) endReqID(field string) string {
	return "end:" + q.c.nonce + ":" + field
}

// latchFor is how long an end latch guards a field whose attempts had ttl:
// the TTL, at least the latch TTL.
func (q *quorumStore) latchFor(ttl time.Duration) time.Duration {
	return max(ttl, time.Duration(q.c.latchMS)*time.Millisecond)
}

// endCall is quorumend.lua for field's attempts up to upto: with free, it
// frees the lock one of them holds; with latch > 0 it raises the end latch
// for that long.
func (q *quorumStore) endCall(m *Mutex, field string, upto int64, latch time.Duration, free bool) scripts.Call {
	var latchMS int64
	if latch > 0 {
		latchMS = msCeil(latch)
	}
	return scripts.Call{
		Keys: m.fullKeys(q.endReqID(field)),
		Args: []any{field, upto, "publish", latchMS, flag(free), q.c.tokenTTLArg},
	}
}

// dirtyFields records, per field, the masters that have not answered one of
// its acquisitions (a straggler, or an error: the request may still run):
// the end of its hold raises the end latch there. An entry goes at the
// hold's end; entries of holds that ended unseen (lost, or closed and never
// unlocked) are pruned when the map has doubled.
type dirtyFields struct {
	mu      sync.Mutex
	fields  map[string][]int64 // field -> Unix ns at which each master became dirty, 0: clean
	pruneAt int
}

// markDirty records that the masters in nodes have not answered field's
// acquisition.
func (q *quorumStore) markDirty(field string, nodes []bool) {
	d := &q.dirty
	now := time.Now().UnixNano()
	d.mu.Lock()
	defer d.mu.Unlock()
	at := d.fields[field]
	for i, ok := range nodes {
		if !ok {
			continue
		}
		if at == nil {
			at = make([]int64, len(q.members))
		}
		at[i] = now
	}
	if at == nil {
		return
	}
	d.fields[field] = at
	if len(d.fields) > max(d.pruneAt, 64) {
		q.pruneDirty()
		d.pruneAt = 2 * len(d.fields)
	}
}

// takeDirty returns and forgets the masters that have not answered one of
// field's acquisitions (nil: none).
func (q *quorumStore) takeDirty(field string) []bool {
	d := &q.dirty
	d.mu.Lock()
	at := d.fields[field]
	delete(d.fields, field)
	d.mu.Unlock()
	if at == nil {
		return nil
	}
	nodes := make([]bool, len(at))
	for i, t := range at {
		nodes[i] = t != 0
	}
	return nodes
}

// pruneDirty forgets the fields of holds that ended without the store
// hearing of it: no live hold has the field and it was marked longer ago
// than any acquisition waits to become a hold. Called with d.mu held.
func (q *quorumStore) pruneDirty() {
	c := q.c
	live := make(map[string]bool)
	c.mu.Lock()
	for h := range c.holds {
		live[h.field] = true
	}
	c.mu.Unlock()
	old := time.Now().Add(-q.latchFor(c.opts.watchdog)).UnixNano()
	for f, at := range q.dirty.fields {
		if live[f] {
			continue
		}
		if newest := maxOf(at); newest < old {
			delete(q.dirty.fields, f)
		}
	}
}

// maxOf returns the largest of vs.
func maxOf(vs []int64) int64 {
	var top int64
	for _, v := range vs {
		top = max(top, v)
	}
	return top
}
