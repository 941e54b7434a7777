package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingLocker counts the calls gocron makes to a Locker.
type countingLocker struct {
	l     gocron.Locker
	calls atomic.Int32
}

func (c *countingLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	c.calls.Add(1)
	return c.l.Lock(ctx, key)
}

// electedPair starts two instances, each with its own client and elector,
// running a job every 100ms that records which instance ran it.
func electedPair(t *testing.T, srv *redistest.Server, locker *countingLocker, copts ...lockmw.Option) (map[string]*scheduler.Elector, map[string]*lockmw.Client, map[string]*instance, *runLog) {
	t.Helper()
	const every = 100 * time.Millisecond
	log := newRunLog(every)
	electors, clients, ins := map[string]*scheduler.Elector{}, map[string]*lockmw.Client{}, map[string]*instance{}
	var list []*instance
	for _, name := range []string{"a", "b"} {
		c := locktest.NewOn(t, srv, copts...)
		e := scheduler.NewElector(c, "leader")
		t.Cleanup(func() { _ = e.Close() })
		opts := []gocron.SchedulerOption{gocron.WithDistributedElector(e)}
		if locker != nil {
			opts = append(opts, gocron.WithDistributedLocker(locker))
		}
		in := newInstance(t, name, opts...)
		electors[name], clients[name], ins[name] = e, c, in
		list = append(list, in)
	}
	startJobs(t, log, "elected", list, nil, log.record)
	return electors, clients, ins, log
}

// leaderOf waits for runs and returns the one instance that ran them.
func leaderOf(t *testing.T, log *runLog) (leader, follower string) {
	t.Helper()
	testsupport.Eventually(t, 10*time.Second, "3 runs", func() bool { return log.count() >= 3 })
	runs := log.byInstance()
	require.Len(t, runs, 1, "only the leader runs jobs: %v", runs)
	for name := range runs {
		leader = name
	}
	if leader == "a" {
		return "a", "b"
	}
	return "b", "a"
}

func TestElectorFailsOverWhenTheLeaderCloses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	locker := &countingLocker{l: scheduler.NewLocker(locktest.NewOn(t, srv))}
	electors, _, _, log := electedPair(t, srv, locker)
	leader, follower := leaderOf(t, log)

	require.NoError(t, electors[leader].IsLeader(ctx))
	err := electors[follower].IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.NotErrorIs(t, err, scheduler.ErrUnavailable)

	require.NoError(t, electors[leader].Close())
	require.NoError(t, electors[leader].Close(), "a second Close")
	assert.ErrorIs(t, electors[leader].IsLeader(ctx), scheduler.ErrNotLeader, "a closed elector never leads")

	testsupport.Eventually(t, 10*time.Second, "the follower runs the job", func() bool { return log.byInstance()[follower] >= 3 })
	before := log.byInstance()[leader]
	testsupport.Eventually(t, 10*time.Second, "3 more runs", func() bool { return log.byInstance()[follower] >= 6 })
	assert.Equal(t, before, log.byInstance()[leader], "the old leader runs nothing")
	require.NoError(t, electors[follower].IsLeader(ctx))
	assert.Zero(t, locker.calls.Load(), "gocron never calls the Locker when an Elector is set")
}

// A crashed leader stops renewing its lock: another instance leads once the
// lock expires. Stopping the leader's scheduler and closing its
// lockmw.Client stops renewal without releasing, as a crash does.
func TestElectorFailsOverWhenTheLeaderCrashes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	electors, clients, ins, log := electedPair(t, srv, nil, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	leader, follower := leaderOf(t, log)

	ins[leader].stop()
	require.NoError(t, clients[leader].Close())
	ttl, err := srv.Client().PTTL(ctx, "gocron:leader").Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "the crashed leader's lock is still there")

	testsupport.Eventually(t, 10*time.Second, "the follower runs the job", func() bool { return log.byInstance()[follower] >= 3 })
	require.NoError(t, electors[follower].IsLeader(ctx))
	err = electors[leader].IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader)
	assert.ErrorIs(t, err, lockmw.ErrClosed, "the old leader knows why")
	require.NoError(t, electors[follower].IsLeader(ctx), "and leaves the new leader's lock alone")
}

// After its lockmw.Client closes, a leader stops leading at once and gives
// the leader lock back at its next IsLeader.
func TestElectorStopsLeadingWhenItsClientCloses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	e := scheduler.NewElector(c, "closing")
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, e.IsLeader(ctx))
	require.NoError(t, c.Close())
	err := e.IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader)
	assert.ErrorIs(t, err, lockmw.ErrClosed)
	n, err := srv.Client().Exists(ctx, "gocron:closing").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the leader lock was given back")
	assert.ErrorIs(t, e.IsLeader(ctx), lockmw.ErrClosed, "a closed client cannot lead again")
}

// Losing the leader lock makes the next IsLeader fail without a round trip;
// the one after tries to lead again.
func TestElectorLosesLeadershipAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	// A lock timeout short against the test, long against a loaded machine.
	const lockTimeout = time.Second
	e := scheduler.NewElector(locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond)), "lose",
		scheduler.WithLockTimeout(lockTimeout), scheduler.WithKeyPrefix("p:"))
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, e.IsLeader(ctx))
	// The leader leads past the lock timeout: the hold outlives the attempt.
	time.Sleep(lockTimeout + lockTimeout/5)
	require.NoError(t, e.IsLeader(ctx))

	other := locktest.NewOn(t, srv).Mutex("p:lose")
	_, err := other.ForceUnlock(ctx)
	require.NoError(t, err)
	hold, err := other.TryLock(ctx, 0, 0)
	require.NoError(t, err)

	var lost error
	testsupport.Eventually(t, 3*time.Second, "IsLeader fails", func() bool {
		lost = e.IsLeader(ctx)
		return lost != nil
	})
	assert.ErrorIs(t, lost, scheduler.ErrNotLeader)
	assert.ErrorIs(t, lost, lockmw.ErrLockLost, "the first failure says the lock was lost")
	err = e.IsLeader(ctx)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "then it tries again and finds the lock busy")

	require.NoError(t, other.Unlock(hold))
	require.NoError(t, e.IsLeader(ctx), "the lock is free again")
	require.NoError(t, e.Close())
	n, err := srv.Client().Exists(ctx, "p:lose").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Close releases the leader lock")
}

func TestElectorWithRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	e := scheduler.NewElector(locktest.NewOn(t, srv), "down")
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, srv.Stop())
	err := e.IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader)
	assert.ErrorIs(t, err, scheduler.ErrUnavailable)
	assert.NotErrorIs(t, err, lockmw.ErrNotAcquired)
}
