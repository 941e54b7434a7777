package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// kinds returns the kinds and fields of evs, for comparison.
func kinds(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event+" "+e.From+">"+e.Field)
	}
	return out
}

// lockState is a lock held by field (rlock:handoffs handoffs) with waiters.
func lockState(now int64, field string, handoffs int64, waiters ...string) *state {
	s := &state{name: "n", kind: kindLock, nowMS: now, ttlMS: 30_000}
	if field != "" {
		s.holders = []holder{{Field: field, Count: 1, ExpiresMS: now + 30_000}}
		s.lock = lockHash{holders: s.holders, handoffs: handoffs}
	} else {
		s.kind, s.ttlMS = "", -2
	}
	for _, w := range waiters {
		s.waiters = append(s.waiters, waiter{Field: w, DeadlineMS: now + 60_000})
	}
	return s
}

func TestTrackerTellsChangesOnce(t *testing.T) {
	tr := newTracker("n", true)
	tr.now = func() time.Time { return time.Unix(0, 0) }
	assert.Equal(t, []string{"free >"}, kinds(tr.observe(lockState(1000, "", 0))))
	assert.Equal(t, []string{"acquired >a:1", "waiter_joined >b:1"}, kinds(tr.observe(lockState(1100, "a:1", 0, "b:1"))))
	// A hand-off message comes before the poll that shows it: told once.
	assert.Equal(t, []string{"handed_over a:1>b:1"}, kinds(tr.handoff("b:1", "0", "a:1", 0)))
	assert.Empty(t, tr.observe(lockState(1200, "b:1", 1)))
	// A hand-off seen by polling only: rlock:handoffs says it was one. Its
	// message may be on its way: it waits one poll, then comes before the
	// changes that follow it.
	assert.Empty(t, kinds(tr.observe(lockState(1300, "c:1", 2))))
	assert.Equal(t, []string{"handed_over b:1>c:1", "released >c:1"}, kinds(tr.observe(lockState(1400, "", 0))))
	// A holder gone at its expiry was lost.
	tr.observe(lockState(1500, "d:1", 0, "e:1"))
	assert.Equal(t, []string{"lost >d:1", "waiter_gave_up >e:1"}, kinds(tr.observe(lockState(31_500, "", 0))))
}

func TestTrackerWithoutHandOffMessagesSaysAWaiterLeft(t *testing.T) {
	tr := newTracker("n", false)
	tr.observe(lockState(1000, "a:1", 0, "b:1"))
	evs := tr.observe(lockState(1100, "a:1", 0))
	assert.Equal(t, []string{"waiter_left >b:1"}, kinds(evs))
	assert.Contains(t, evs[0].Detail, "between two polls")
}

func TestTrackerForgetsFieldsLongGone(t *testing.T) {
	tr := newTracker("n", true)
	tr.observe(lockState(1000, "", 0))
	for i := range 100 {
		tr.handoff(fmt.Sprintf("c:%d", i+1), "0", fmt.Sprintf("c:%d", i), 0)
		tr.observe(lockState(int64(1000+i), fmt.Sprintf("c:%d", i+1), 1))
	}
	assert.LessOrEqual(t, len(tr.began)+len(tr.ended), 10, "bounded by the last few observations")
}

// rwState is a read-write lock held by fields (a writer's ends in ":write")
// with waiters (their queue entries: a writer's ends in ":write" too).
func rwState(now int64, fields []string, waiters ...string) *state {
	s := &state{name: "n", kind: kindRWLock, nowMS: now, ttlMS: 30_000, mode: "read"}
	for _, f := range fields {
		s.holders = append(s.holders, holder{Field: f, Count: 1, ExpiresMS: now + 30_000, Side: sideOf(f)})
		if sideOf(f) == "write" {
			s.mode = "write"
		}
	}
	if len(fields) == 0 {
		s.kind, s.ttlMS = "", -2
	}
	for _, w := range waiters {
		s.waiters = append(s.waiters, waiter{Field: w, Side: sideOf(w), DeadlineMS: now + 60_000})
	}
	return s
}

// A read-write lock's hand-off message names owners, without the writer's
// ":write": the transcript names the holders' fields, one line per
// hand-off, and the poll after it adds nothing.
func TestTrackerTellsAReadWriteHandOffAsOneLine(t *testing.T) {
	tr := newTracker("n", true)
	tr.observe(rwState(1000, []string{"a:39"}, "b:37:write"))
	evs := tr.handoff("b:37", "0", "a:39", 0)
	assert.Equal(t, []string{"handed_over a:39>b:37:write"}, kinds(evs))
	assert.True(t, evs[0].GapExact)
	assert.Equal(t, int64(0), *evs[0].GapMS)
	assert.Equal(t, []string{"waiter_joined >a:40", "waiter_joined >c:1"},
		kinds(tr.observe(rwState(1100, []string{"b:37:write"}, "a:40", "c:1"))), "the poll adds no holder")
	// The writer hands over to both readers queued: one message each.
	assert.Equal(t, []string{"handed_over b:37:write>a:40"}, kinds(tr.handoff("a:40", "0", "b:37", 0)))
	assert.Equal(t, []string{"handed_over b:37:write>c:1"}, kinds(tr.handoff("c:1", "0", "b:37", 0)))
	assert.Empty(t, kinds(tr.observe(rwState(1200, []string{"a:40", "c:1"}))))
	assert.Equal(t, []string{"released >a:40", "released >c:1"}, kinds(tr.observe(rwState(1300, nil))))
}

// A message that comes before the poll that saw its waiter queued cannot
// tell a writer from a reader: the next poll settles it, without a line.
func TestTrackerSettlesAReadWriteHandOffToAWriterNotSeenQueued(t *testing.T) {
	tr := newTracker("n", true)
	tr.observe(rwState(1000, []string{"a:1"}))
	assert.Equal(t, []string{"handed_over a:1>b:1"}, kinds(tr.handoff("b:1", "0", "a:1", 0)))
	assert.Empty(t, kinds(tr.observe(rwState(1100, []string{"b:1:write"}))))
	assert.Equal(t, []string{"released >b:1:write"}, kinds(tr.observe(rwState(1200, nil))))
}

// Seen by polling, a hand-off's gap is known to the poll's precision.
func TestTrackerGivesAPolledHandOffsGapAsThePollsPrecision(t *testing.T) {
	tr := newTracker("n", false)
	tr.observe(rwState(1000, []string{"a:1"}, "b:1:write"))
	evs := tr.observe(rwState(1096, []string{"b:1:write"}))
	assert.Equal(t, []string{"handed_over a:1>b:1:write"}, kinds(evs))
	assert.False(t, evs[0].GapExact)
	assert.Equal(t, int64(96), *evs[0].GapMS)
	assert.Contains(t, evs[0].text(), "gap ≤ 96ms (seen by polling")
}

// Two readers leave; the last one's release hands the lock to the writer.
// The first one's end, seen by the poll after the message, is told before
// the hand-off, at its time.
func TestTrackerTellsAHolderThatLeftBeforeAHandOffFirst(t *testing.T) {
	tr := newTracker("n", true)
	clock := time.Unix(0, 0)
	tr.now = func() time.Time { return clock }
	tr.observe(rwState(1000, []string{"a:1", "b:1"}, "c:1:write"))
	handed := tr.handoff("c:1", "0", "b:1", 0)
	clock = clock.Add(time.Millisecond)
	evs := tr.observeAfter(rwState(1100, []string{"c:1:write"}), handed)
	assert.Equal(t, []string{"released >a:1", "handed_over b:1>c:1:write"}, kinds(evs))
	assert.Equal(t, evs[1].Time, evs[0].Time)
}

// An end says how long the hold lasted when watch saw it begin: from a
// hand-off message's server time, or from the poll that first showed it.
func TestTrackerSaysHowLongAHoldLasted(t *testing.T) {
	tr := newTracker("n", true)
	tr.observe(lockState(1000, "a:1", 0, "b:1")) // already held: since unknown
	evs := tr.handoff("b:1", "0", "a:1", 1050)
	assert.Nil(t, evs[0].HeldMS, "a's hold began before watch started")
	tr.observe(lockState(1100, "b:1", 1))
	evs = tr.observe(lockState(1400, "", 0))
	assert.Equal(t, []string{"released >b:1"}, kinds(evs))
	assert.Equal(t, int64(350), *evs[0].HeldMS, "from the hand-off's server time")
	tr.observe(lockState(1500, "c:1", 0))
	assert.Empty(t, tr.observe(lockState(1700, "d:1", 1)), "waits a poll for its message")
	evs = tr.observe(lockState(1800, "d:1", 1))
	assert.Equal(t, []string{"handed_over c:1>d:1"}, kinds(evs))
	assert.Equal(t, int64(200), *evs[0].HeldMS, "from the poll that first showed it")
	assert.Contains(t, evs[0].text(), "after a hold of 200ms")
}

// A poll can see a hand-off before its message arrives: the message, when
// it comes within the patience, tells it exactly; after the patience it is
// told as polled.
func TestTrackerWaitsForTheMessageOfAHandOffAPollSawFirst(t *testing.T) {
	tr := newTracker("n", true)
	tr.patience = 2
	tr.observe(lockState(1000, "a:1", 0, "b:1"))
	assert.Empty(t, tr.observe(lockState(1020, "b:1", 1)))
	evs := tr.handoff("b:1", "0", "a:1", 1010)
	assert.Equal(t, []string{"handed_over a:1>b:1"}, kinds(evs))
	assert.True(t, evs[0].GapExact, "the message names it exactly")
	assert.Empty(t, tr.observe(lockState(1040, "b:1", 1)), "told once")

	assert.Empty(t, tr.observe(lockState(1060, "c:1", 2)))
	assert.Empty(t, tr.observe(lockState(1080, "c:1", 2)))
	evs = tr.observe(lockState(1100, "c:1", 2))
	assert.Equal(t, []string{"handed_over b:1>c:1"}, kinds(evs), "no message within the patience")
	assert.False(t, evs[0].GapExact)
	assert.Empty(t, tr.handoff("c:1", "0", "b:1", 1050), "a message after it was told adds nothing")
}

// A poll read before a hand-off's script ran, whose reply comes after the
// message, still shows the giver and the waiter queued: the new holder the
// message named is not gone (a stress run at load 8 printed "released" of
// the new reader before its hand-off line), and the next poll tells nothing
// twice.
func TestTrackerAStateOlderThanAHandOffMessageEndsNobody(t *testing.T) {
	tr := newTracker("n", true)
	tr.observe(rwState(1000, []string{"b:1:write"}, "a:2"))
	assert.Equal(t, []string{"handed_over b:1:write>a:2"}, kinds(tr.handoff("a:2", "0", "b:1", 0)))
	assert.Empty(t, kinds(tr.observe(rwState(1050, []string{"b:1:write"}, "a:2"))), "the older state ends nobody")
	assert.Empty(t, kinds(tr.observe(rwState(1100, []string{"a:2"}))), "the next poll sees the new reader: nothing twice")
	assert.Equal(t, []string{"released >a:2"}, kinds(tr.observe(rwState(1200, nil))))
}

// A writer's hand-off that a poll saw and told after the patience (its
// message late, on a loaded machine) is not told again when the message
// comes: the message names the owner, and the writer's queue entry, which
// made it the writer's field, is gone by then (a stress run printed the
// hand-off twice, once to "svc-b:1:write", once to "svc-b:1").
func TestTrackerALateMessageOfAWritersHandOffAddsNothing(t *testing.T) {
	tr := newTracker("n", true)
	tr.patience = 1
	tr.observe(rwState(1000, []string{"a:1"}, "b:1:write"))
	assert.Empty(t, tr.observe(rwState(1020, []string{"b:1:write"})), "waits a poll for its message")
	evs := tr.observe(rwState(1040, []string{"b:1:write"}))
	assert.Equal(t, []string{"handed_over a:1>b:1:write"}, kinds(evs), "no message within the patience")
	assert.Empty(t, kinds(tr.handoff("b:1", "0", "a:1", 1010)), "the late message adds nothing")
	assert.Empty(t, kinds(tr.observe(rwState(1060, []string{"b:1:write"}))))
}
