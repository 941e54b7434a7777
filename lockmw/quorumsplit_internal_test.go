package lockmw

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// splitTally returns the tally of an attempt of the field "me" on masters
// whose run IDs are ids (their order ranks them, not their indexes), with a
// keeping grace of 200ms.
func splitTally(ids ...string) *acquireTally {
	q := &quorumStore{need: len(ids)/2 + 1}
	for i, id := range ids {
		mb := &member{q: q, i: i}
		mb.restarts.runID = id
		q.members = append(q.members, mb)
	}
	return newAcquireTally(q, attempt{field: "me", ttl: time.Second})
}

// win and busy set master i's answer: won by the attempt, or held by holder
// for pttl, won there age ago.
func (t *acquireTally) win(i int) *acquireTally {
	t.votes[i], t.took[i] = voteWon, true
	return t
}

func (t *acquireTally) busy(i int, holder string, age, pttl time.Duration) *acquireTally {
	t.votes[i], t.replies[i], t.ages[i], t.refused[i] = voteBusy, acquireReply{holder: holder, pttl: pttl}, age, false
	return t
}

// refused sets master i's answer: refused by holder's mark, left for pttl,
// made age ago.
func (t *acquireTally) refusedBy(i int, holder string, age, pttl time.Duration) *acquireTally {
	t.busy(i, holder, age, pttl).refused[i] = true
	return t
}

// The rule every contender of a split computes from its answers: the one
// holding the most masters won within the grace, then the first of them in
// run-ID order, keeps; a holder with a majority holds; an older holding (an
// expiring key, a dead contender's partial win) ranks not.
func TestQuorumSplitStanding(t *testing.T) {
	const fresh, old, long = 2 * time.Millisecond, 10 * time.Second, 20 * time.Second
	for _, tc := range []struct {
		name  string
		tally *acquireTally
		want  standing
	}{
		{"first in run-ID order keeps", splitTally("a", "b", "c").win(0).busy(1, "x", fresh, time.Second).busy(2, "y", fresh, time.Second), standKeeper},
		{"another first in run-ID order", splitTally("a", "b", "c").busy(0, "x", fresh, time.Second).win(1).busy(2, "y", fresh, time.Second), standLoser},
		{"run IDs order the masters, not indexes", splitTally("c", "b", "a").busy(0, "x", fresh, time.Second).win(2).busy(1, "y", fresh, time.Second), standKeeper},
		{"a master not answered", splitTally("a", "b", "c").busy(0, "x", fresh, time.Second).win(2), standLoser},
		{"a holder with a majority", splitTally("a", "b", "c").win(0).busy(1, "x", old, long).busy(2, "x", fresh, long), standHeld},
		{"an expiring key ranks not", splitTally("a", "b", "c").busy(0, "k", old, 5*time.Millisecond).win(1).busy(2, "y", fresh, time.Second), standKeeper},
		{"a dead contender's partial win ranks not", splitTally("a", "b", "c").busy(0, "d", old, long).win(1).busy(2, "y", fresh, time.Second), standKeeper},
		{"an age not known ranks not", splitTally("a", "b", "c").busy(0, "d", -1, long).win(1).busy(2, "y", fresh, time.Second), standKeeper},
		{"nothing to keep for: two old holdings", splitTally("a", "b", "c").win(0).busy(1, "d", old, long).busy(2, "e", old, long), standHeld},
		{"a bystander of a split", splitTally("a", "b", "c").busy(0, "x", fresh, time.Second).busy(1, "y", fresh, time.Second).busy(2, "z", fresh, time.Second), standLoser},
		{"a mark ranks its contender, but is no holding", splitTally("a", "b", "c").refusedBy(0, "x", fresh, 100*time.Millisecond).busy(1, "x", fresh, time.Second).win(2), standLoser},
		{"a mark beside a majority held", splitTally("a", "b", "c").refusedBy(0, "x", fresh, 100*time.Millisecond).busy(1, "x", old, long).busy(2, "x", fresh, long), standHeld},
		{"a rival keeper refused by a mark", splitTally("a", "b", "c").busy(0, "x", fresh, time.Second).win(1).refusedBy(2, "x", fresh, 100*time.Millisecond), standLoser},
		{"more masters rank first", splitTally("a", "b", "c", "d", "e").busy(0, "x", fresh, time.Second).win(1).win(2).busy(3, "y", fresh, time.Second).busy(4, "z", fresh, time.Second), standKeeper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.tally.standing())
		})
	}
}

// What an attempt that did not win reports: busy until a majority of the
// masters is free when a holder has one; when it lost a split, busy for what
// is left of the first-ranked contender's keeping grace (woken by the unlock
// message of its release or of its giving up); when it ranked first and
// gave up, a random back-off marked split (not woken by its own undo).
func TestQuorumSplitBusyReply(t *testing.T) {
	held := splitTally("a", "b", "c").win(0).busy(1, "x", time.Second, 900*time.Millisecond).busy(2, "x", time.Second, 500*time.Millisecond)
	r, ok := held.busyReply(time.Millisecond)
	require.True(t, ok)
	assert.False(t, r.split)
	assert.Equal(t, "x", r.holder)
	assert.Equal(t, 500*time.Millisecond, r.pttl, "a majority is free when the second master is")

	lost := splitTally("a", "b", "c").busy(0, "x", 50*time.Millisecond, time.Second).win(1).busy(2, "y", time.Millisecond, time.Second)
	r, ok = lost.busyReply(10 * time.Millisecond)
	require.True(t, ok)
	assert.False(t, r.split, "woken by the first-ranked's release, or its giving up")
	assert.Equal(t, "x", r.holder, "the first-ranked")
	assert.GreaterOrEqual(t, r.pttl, 150*time.Millisecond+10*time.Millisecond, "what is left of its grace, and the attempt's time")
	assert.Less(t, r.pttl, 150*time.Millisecond+30*time.Millisecond)

	gaveUp := splitTally("a", "b", "c").win(0).busy(1, "x", time.Millisecond, time.Second).busy(2, "y", time.Millisecond, time.Second)
	r, ok = gaveUp.busyReply(10 * time.Millisecond)
	require.True(t, ok)
	assert.True(t, r.split)
	assert.GreaterOrEqual(t, r.pttl, 30*time.Millisecond, "past a rival's completion")

	_, ok = splitTally("a", "b", "c").win(0).busyReply(time.Millisecond)
	assert.False(t, ok, "no master answered busy")
}

// A split on real masters, made by planting other contenders' wins with
// the acquire script: the attempt that holds the first master in run-ID
// order keeps it and completes once the others undo theirs (here: their
// keys are deleted as soon as the attempt has won its master), where
// Redlock's rule alone would give up. A dead contender's older win on the
// first master does not rank. The keeping grace is 200ms: on a machine too
// loaded to delete the keys within it, the attempt gives up, so each case
// has five tries and must complete once.
func TestQuorumSplitFirstRankedCompletes(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	f := newSplitFixture(t, "q-split-warm")
	srvs, rdbs, order, c, other, oq := f.srvs, f.rdbs, f.order, f.c, f.other, f.oq

	plant := func(name string, i int, field string, age time.Duration) {
		m := other.Mutex(name)
		call := oq.acquireCall(m, attempt{field: field, ttl: time.Minute}, 1)
		require.NoError(t, redis.NewScript(scripts.QuorumAcquire.Source()).Run(ctx, rdbs[i], call.Keys, call.Args...).Err())
		if age > 0 {
			now, err := rdbs[i].Time(ctx).Result()
			require.NoError(t, err)
			require.NoError(t, rdbs[i].HSet(ctx, name, "rlock:since", now.Add(-age).UnixMilli()).Err())
		}
	}
	for _, tc := range []struct {
		name  string
		mine  int   // the master the attempt wins, by run-ID order
		undo  []int // the fresh contenders' masters, by run-ID order
		plant func(name string)
	}{
		{"two contenders after it", 0, []int{1, 2}, func(name string) {
			plant(name, order[1], other.id+":x", 0)
			plant(name, order[2], other.id+":y", 0)
		}},
		{"a dead contender's old win first", 1, []int{2}, func(name string) {
			plant(name, order[0], other.id+":dead", 10*time.Second)
			plant(name, order[2], other.id+":y", 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var completed bool
			for try := 0; try < 5 && !completed; try++ {
				name := fmt.Sprintf("q-split-%d-%d", tc.mine, try)
				tc.plant(name)
				done := make(chan error, 1)
				m := c.Mutex(name)
				go func() {
					h, err := m.TryLock(ctx, 0, 0)
					if err == nil {
						err = m.Unlock(h)
					}
					done <- err
				}()
				// As soon as the attempt holds its master, the fresh
				// contenders undo their wins.
				mine := srvs[order[tc.mine]].Client()
				err := waitOr(t, done, func() bool { return mine.Exists(ctx, name).Val() == 1 })
				if errors.Is(err, errPending) {
					for _, pos := range tc.undo {
						require.NoError(t, rdbs[order[pos]].Del(ctx, name).Err())
					}
					err = testsupport.Recv(t, done, 30*time.Second, "TryLock")
				}
				completed = err == nil
				if !completed {
					t.Logf("try %d: %v", try, err)
					require.ErrorIs(t, err, ErrNotAcquired)
				}
			}
			assert.True(t, completed, "the first-ranked attempt completed its split")
		})
	}
}

// errPending is waitOr's: cond became true before done received.
var errPending = errors.New("pending")

// waitOr polls cond until it is true (errPending) or done receives (its
// error), for at most 30 s.
func waitOr(t *testing.T, done <-chan error, cond func() bool) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return err
		default:
		}
		if cond() {
			return errPending
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	t.Fatal("neither")
	return nil
}

// runIDOrder returns the servers' indexes ordered by their run IDs.
func runIDOrder(t *testing.T, srvs []*redistest.Server) []int {
	re := regexp.MustCompile(`run_id:([0-9a-f]+)`)
	ids := make([]string, len(srvs))
	order := make([]int, len(srvs))
	for i, s := range srvs {
		info, err := s.Client().Info(context.Background(), "server").Result()
		require.NoError(t, err)
		ids[i], order[i] = re.FindStringSubmatch(info)[1], i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	return order
}

// splitFixture is a quorum of three real masters, their run-ID order, and
// two Clients on it (the second's store plants rivals' wins), the run IDs
// known to the first.
type splitFixture struct {
	srvs     []*redistest.Server
	rdbs     []redis.UniversalClient
	order    []int
	c, other *Client
	oq       *quorumStore
}

func newSplitFixture(t *testing.T, warmName string) splitFixture {
	t.Helper()
	f := splitFixture{srvs: make([]*redistest.Server, 3), rdbs: make([]redis.UniversalClient, 3)}
	for i := range f.srvs {
		f.srvs[i] = redistest.Start(t)
		f.rdbs[i] = f.srvs[i].NewClient()
	}
	f.order = runIDOrder(t, f.srvs)
	f.c, f.other = NewQuorum(f.rdbs), NewQuorum(f.rdbs)
	t.Cleanup(func() { f.c.Close(); f.other.Close() })
	f.oq = f.other.store.(*quorumStore)
	warm := f.c.Mutex(warmName)
	h, err := warm.TryLock(testsupport.Ctx(t), 0, 0)
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(h))
	return f
}
