package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// handOffBound bounds a hand-off in these tests: generous for a loaded
// machine, and well under the default 30s watchdog timeout, so that a
// takeover within it is a hand-off, not an expiry.
const handOffBound = 10 * time.Second

// defaultOptions gives a go-redis client the defaults users have
// (ContextTimeoutEnabled false), for the tests whose subject is a fault.
func defaultOptions(o *redis.Options) { o.ContextTimeoutEnabled = false }

// countingLocker counts the calls gocron makes to a Locker.
type countingLocker struct {
	l     gocron.Locker
	calls atomic.Int32
}

func (c *countingLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	c.calls.Add(1)
	return c.l.Lock(ctx, key)
}

// member is one instance of an elected fleet: its client, elector and
// gocron scheduler.
type member struct {
	name string
	c    *lockmw.Client
	e    *scheduler.Elector
	in   *instance
}

// electedFleet starts n instances, each with its own client and elector,
// running a job every 100ms that records which instance ran it.
func electedFleet(t *testing.T, srv *redistest.Server, n int, locker *countingLocker) ([]*member, *runLog) {
	t.Helper()
	log := newRunLog(100 * time.Millisecond)
	var fleet []*member
	var ins []*instance
	for i := range n {
		m := &member{name: fmt.Sprintf("instance-%d", i), c: locktest.NewOn(t, srv)}
		m.e = scheduler.NewElector(m.c, "leader")
		t.Cleanup(func() { _ = m.e.Close() })
		opts := []gocron.SchedulerOption{gocron.WithDistributedElector(m.e)}
		if locker != nil {
			opts = append(opts, gocron.WithDistributedLocker(locker))
		}
		m.in = newInstance(t, m.name, opts...)
		fleet, ins = append(fleet, m), append(ins, m.in)
	}
	startJobs(t, log, "elected", ins, nil, log.record)
	return fleet, log
}

// leaders returns the electors of electors whose IsLeader answers nil now.
func leaders(electors ...*scheduler.Elector) []*scheduler.Elector {
	var l []*scheduler.Elector
	for _, e := range electors {
		if e.IsLeader(context.Background()) == nil {
			l = append(l, e)
		}
	}
	return l
}

func electorsOf(fleet []*member) []*scheduler.Elector {
	var es []*scheduler.Elector
	for _, m := range fleet {
		es = append(es, m.e)
	}
	return es
}

// leaderOf waits for runs of the job and returns the one member that ran
// them, after checking that its elector, and no other, leads.
func leaderOf(t *testing.T, fleet []*member, log *runLog) *member {
	t.Helper()
	testsupport.Eventually(t, handOffBound, "3 runs", func() bool { return log.count() >= 3 })
	runs := log.byInstance()
	require.Len(t, runs, 1, "only the leader runs jobs: %v", runs)
	for _, m := range fleet {
		if runs[m.name] > 0 {
			require.Equal(t, []*scheduler.Elector{m.e}, leaders(electorsOf(fleet)...), "the instance that runs the jobs leads, alone")
			return m
		}
	}
	t.Fatalf("runs by an unknown instance: %v", runs)
	return nil
}

// Three instances with real gocron schedulers: one leads and runs every
// job; when it closes, one standby leads at once (a hand-off, well within
// the 30s watchdog timeout) and runs the jobs, and the closed one never
// leads again.
func TestElectorOneLeaderAmongThreeHandsOverAtClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	locker := &countingLocker{l: scheduler.NewLocker(locktest.NewOn(t, srv))}
	fleet, log := electedFleet(t, srv, 3, locker)
	old := leaderOf(t, fleet, log)
	for _, m := range fleet {
		if m != old {
			err := m.e.IsLeader(ctx)
			require.ErrorIs(t, err, scheduler.ErrNotLeader, "%s is a standby", m.name)
			assert.NotErrorIs(t, err, scheduler.ErrUnavailable)
		}
	}

	old.in.stop()
	require.NoError(t, old.e.Close())
	require.NoError(t, old.e.Close(), "a second Close")
	err := old.e.IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader, "a closed elector never leads")
	assert.ErrorContains(t, err, "is closed")

	var next *scheduler.Elector
	testsupport.Eventually(t, handOffBound, "a standby leads", func() bool {
		l := leaders(electorsOf(fleet)...)
		if len(l) == 1 {
			next = l[0]
		}
		return len(l) == 1
	})
	require.NotSame(t, old.e, next)
	var heir *member
	for _, m := range fleet {
		if m.e == next {
			heir = m
		}
	}
	before := log.byInstance()[old.name]
	testsupport.Eventually(t, handOffBound, "the new leader runs the job", func() bool { return log.byInstance()[heir.name] >= 3 })
	runs := log.byInstance()
	assert.Equal(t, before, runs[old.name], "the old leader runs nothing")
	assert.Len(t, runs, 2, "the third instance never ran the job: %v", runs)
	assert.Equal(t, []*scheduler.Elector{next}, leaders(electorsOf(fleet)...), "one leader")
	assert.Zero(t, locker.calls.Load(), "gocron never calls the Locker when an Elector is set")
}

// lossHandler is a slog.Handler that, when its elector logs the loss of its
// leadership, sends what that elector's IsLeader answers at that moment
// (the campaign goes on only after the log) on ch.
type lossHandler struct {
	e  atomic.Pointer[scheduler.Elector]
	ch chan error
}

func (h *lossHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lossHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "scheduler: leadership lost" {
		select {
		case h.ch <- h.e.Load().IsLeader(ctx):
		default:
		}
	}
	return nil
}

func (h *lossHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lossHandler) WithGroup(string) slog.Handler      { return h }

// A forced unlock deletes the leader lock: the leader learns it at its next
// renewal, its IsLeader fails from then on (no stale nil once the loss is
// known), and the campaigns go on until one of the electors, maybe the same,
// leads again.
func TestElectorLeadsAgainAfterAForcedUnlock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var electors []*scheduler.Elector
	handlers := map[*scheduler.Elector]*lossHandler{}
	for range 3 {
		h := &lossHandler{ch: make(chan error, 1)}
		c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
		e := scheduler.NewElector(c, "forced", scheduler.WithLogger(slog.New(h)))
		h.e.Store(e)
		t.Cleanup(func() { _ = e.Close() })
		electors, handlers[e] = append(electors, e), h
	}
	var leader *scheduler.Elector
	testsupport.Eventually(t, handOffBound, "one leads", func() bool {
		l := leaders(electors...)
		if len(l) == 1 {
			leader = l[0]
		}
		return len(l) == 1
	})

	n, err := locktest.NewOn(t, srv).Mutex("gocron:forced").ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, n, "the leader lock was there")

	lost := testsupport.Recv(t, handlers[leader].ch, handOffBound, "the leader logs the loss")
	assert.ErrorIs(t, lost, scheduler.ErrNotLeader, "IsLeader fails as soon as the loss is known")
	assert.ErrorIs(t, lost, lockmw.ErrLockLost, "and says why")
	testsupport.Eventually(t, handOffBound, "one leads again", func() bool { return len(leaders(electors...)) == 1 })
}

// When the lockmw.Client of a leader closes, its IsLeader fails at once
// (lockmw.ErrClosed), the leader lock is given back (a standby leads well
// within the 30s watchdog timeout) and the campaign's goroutine ends without
// the Elector's Close.
func TestElectorEndsWithItsClient(t *testing.T) {
	// Not parallel: goleak compares the goroutines with those before the
	// electors started, and paused parallel tests start none.
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	before := goleak.IgnoreCurrent()
	a := lockmw.New(srv.NewClient())
	ea := scheduler.NewElector(a, "ending")
	testsupport.Eventually(t, handOffBound, "a leads", func() bool { return ea.IsLeader(ctx) == nil })
	b := lockmw.New(srv.NewClient())
	eb := scheduler.NewElector(b, "ending")

	require.NoError(t, a.Close())
	err := ea.IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader, "no longer leads once its client is closed")
	assert.ErrorIs(t, err, lockmw.ErrClosed)
	testsupport.Eventually(t, handOffBound, "b leads", func() bool { return eb.IsLeader(ctx) == nil })
	assert.ErrorIs(t, ea.IsLeader(ctx), lockmw.ErrClosed, "a closed client never leads again")

	require.NoError(t, b.Close())
	assert.ErrorIs(t, eb.IsLeader(ctx), lockmw.ErrClosed)
	goleak.VerifyNone(t, before)
	require.NoError(t, ea.Close(), "Close after the campaign ended")
	require.NoError(t, eb.Close())
}

// ctxMark marks the contexts handed to IsLeader, so that a hook can see a
// command sent with one.
type ctxMark struct{}

// markHook counts the commands sent with a context marked by ctxMark.
type markHook struct{ n atomic.Int32 }

func (h *markHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *markHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(ctxMark{}) != nil {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *markHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(ctxMark{}) != nil {
			h.n.Add(int32(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// IsLeader answers from memory: with the server frozen (a round trip would
// hang, then fail) the leader still answers nil and the standby
// ErrNotLeader, and no command is sent with their contexts.
func TestElectorIsLeaderMakesNoRoundTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.WithValue(testsupport.Ctx(t), ctxMark{}, true)
	var hook markHook
	var electors []*scheduler.Elector
	for range 2 {
		rdb := srv.NewClient(defaultOptions)
		rdb.AddHook(&hook)
		e := scheduler.NewElector(locktest.New(t, rdb), "memory")
		t.Cleanup(func() { _ = e.Close() })
		electors = append(electors, e)
	}
	testsupport.Eventually(t, handOffBound, "one leads", func() bool { return len(leaders(electors...)) == 1 })
	leader, standby := electors[0], electors[1]
	if leader.IsLeader(ctx) != nil {
		leader, standby = standby, leader
	}

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() }) // before the electors close
	for range 100 {
		require.NoError(t, leader.IsLeader(ctx))
		require.ErrorIs(t, standby.IsLeader(ctx), scheduler.ErrNotLeader)
	}
	require.NoError(t, srv.Resume())
	assert.Zero(t, hook.n.Load(), "IsLeader sent no command")
}

// A campaign that meets Redis down retries: IsLeader says not leader (and
// never ErrUnavailable, which is the Locker's), and the elector leads once
// Redis is back.
func TestElectorCampaignsThroughRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	require.NoError(t, srv.Stop())
	e := scheduler.NewElector(locktest.New(t, srv.NewClient(defaultOptions)), "down")
	t.Cleanup(func() { _ = e.Close() })
	err := e.IsLeader(ctx)
	require.ErrorIs(t, err, scheduler.ErrNotLeader)
	assert.NotErrorIs(t, err, scheduler.ErrUnavailable)
	assert.NotErrorIs(t, err, lockmw.ErrNotAcquired)

	require.NoError(t, srv.Restart())
	// The campaign backs off up to 5s between attempts.
	testsupport.Eventually(t, 20*time.Second, "the elector leads once Redis is back", func() bool { return e.IsLeader(ctx) == nil })
}

// A leader cut off from Redis stops leading before its lock can expire;
// a standby leads only after that: polling the standby, then the leader,
// never finds both leading.
func TestElectorLeaderCutOffStepsDownBeforeTheStandbyLeads(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const watchdog = 600 * time.Millisecond
	var fail [2]locktest.FailHook
	var electors []*scheduler.Elector
	// The latest time each elector's key could still expire from what it
	// knows: a hold's start, or a renewal's send, plus the watchdog timeout.
	var bound [2]atomic.Int64
	for i := range 2 {
		rdb := srv.NewClient(defaultOptions)
		rdb.AddHook(&fail[i])
		hooks := lockmw.Hooks{
			HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
				bound[i].Store(time.Now().Add(watchdog).UnixNano())
				return nil
			},
			Renewal: func(e lockmw.RenewalEvent) {
				if e.Err == nil && len(e.Locks) > 0 && e.Locks[0].Outcome == lockmw.RenewalOK {
					bound[i].Store(e.Sent.Add(watchdog).UnixNano())
				}
			},
		}
		e := scheduler.NewElector(locktest.New(t, rdb, lockmw.WithWatchdogTimeout(watchdog), lockmw.WithHooks(hooks)), "cut")
		t.Cleanup(func() { _ = e.Close() })
		electors = append(electors, e)
	}
	testsupport.Eventually(t, handOffBound, "one leads", func() bool { return len(leaders(electors...)) == 1 })
	li := 0
	if electors[1].IsLeader(ctx) == nil {
		li = 1
	}
	leader, standby := electors[li], electors[1-li]

	fail[li].On.Store(true)
	testsupport.Eventually(t, handOffBound, "the standby leads", func() bool {
		if standby.IsLeader(ctx) != nil {
			return false
		}
		err := leader.IsLeader(ctx)
		if late := time.Since(time.Unix(0, bound[li].Load())); err == nil && late > 0 {
			// The leader's loss timer fires a margin before the key can
			// expire; it has not run although that time has passed: a
			// starved process (the limit of any lease), not rlock's order.
			t.Logf("the cut-off leader's loss timer ran late (%v after its key could have expired): the order is not judged", late.Round(time.Millisecond))
			return true
		}
		require.ErrorIs(t, err, scheduler.ErrNotLeader, "the cut-off leader stopped leading before the standby led")
		assert.ErrorIs(t, err, lockmw.ErrLockLost)
		return true
	})
	fail[li].On.Store(false)
}

// Close during a campaign that waits in the queue ends it at once.
func TestElectorCloseOfAStandby(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a := scheduler.NewElector(locktest.NewOn(t, srv), "standby")
	t.Cleanup(func() { _ = a.Close() })
	testsupport.Eventually(t, handOffBound, "a leads", func() bool { return a.IsLeader(ctx) == nil })
	b := scheduler.NewElector(locktest.NewOn(t, srv), "standby")
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	require.NoError(t, testsupport.Recv(t, closed, handOffBound, "the standby's Close"))
	assert.ErrorIs(t, b.IsLeader(ctx), scheduler.ErrNotLeader)
	assert.NoError(t, a.IsLeader(ctx), "the leader goes on")
}

// backoffHandler is a slog.Handler that sends the back-off of every failed
// campaign attempt that lockmw logs on ch.
type backoffHandler struct{ ch chan time.Duration }

func (h backoffHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h backoffHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "backoff" {
			select {
			case h.ch <- a.Value.Duration():
			default:
			}
		}
		return true
	})
	return nil
}

func (h backoffHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h backoffHandler) WithGroup(string) slog.Handler      { return h }

// A campaign that waits between attempts with Redis failing ends as soon as its
// client closes, not after the back-off.
func TestElectorEndsWithItsClientDuringABackOff(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var fail locktest.FailHook
	fail.On.Store(true)
	rdb := srv.NewClient(defaultOptions)
	rdb.AddHook(&fail)
	h := backoffHandler{ch: make(chan time.Duration, 1)}
	c := locktest.New(t, rdb, lockmw.WithLogger(slog.New(h)))
	e := scheduler.NewElector(c, "backoff")
	t.Cleanup(func() { _ = e.Close() })
	var backoff time.Duration
	for backoff < time.Second {
		backoff = testsupport.Recv(t, h.ch, 30*time.Second, "a failed attempt")
	}
	closed := time.Now()
	require.NoError(t, c.Close())
	testsupport.Eventually(t, 10*time.Second, "the campaign ends", func() bool {
		return errors.Is(e.IsLeader(ctx), lockmw.ErrClosed)
	})
	took := time.Since(closed)
	assert.Less(t, took, backoff, "the campaign ended %v after the client's Close, before its back-off of %v", took, backoff)
	assert.ErrorContains(t, e.IsLeader(ctx), "the campaign ended")
}

// answers records what an Elector's IsLeader answered gocron.
type answers struct {
	e      *scheduler.Elector
	asked  atomic.Int32
	leader atomic.Int32
}

func (a *answers) IsLeader(ctx context.Context) error {
	err := a.e.IsLeader(ctx)
	if err == nil {
		a.leader.Add(1)
	}
	a.asked.Add(1)
	return err
}

// A job started immediately asks IsLeader about a millisecond after the
// Elector was made, while its first campaign attempt is in flight: IsLeader
// waits for that attempt, so the first run happens, once. (Before, it
// answered "campaigning" and the first run was skipped on every instance.)
// The lock timeout, which bounds that wait, is generous here so that a
// loaded machine's slow round trip cannot skip the run.
func TestElectorRunsAJobStartedImmediately(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	start := func(t *testing.T, name string, n int) (runs *atomic.Int32, asked []*answers, ins []*instance) {
		runs = new(atomic.Int32)
		var electors []*scheduler.Elector
		for range n {
			electors = append(electors, scheduler.NewElector(locktest.NewOn(t, srv), name, scheduler.WithLockTimeout(handOffBound)))
		}
		for i, e := range electors {
			t.Cleanup(func() { _ = e.Close() })
			a := &answers{e: e}
			in := newInstance(t, fmt.Sprintf("instance-%d", i), gocron.WithDistributedElector(a))
			asked, ins = append(asked, a), append(ins, in)
		}
		for _, in := range ins { // the schedulers start together, right after their electors
			in.add(t, gocron.DurationJob(time.Hour), gocron.NewTask(func() { runs.Add(1) }),
				gocron.WithStartAt(gocron.WithStartImmediately()), gocron.WithName("immediate"))
		}
		return runs, asked, ins
	}

	t.Run("one instance runs it", func(t *testing.T) {
		runs, _, _ := start(t, "immediate-one", 1)
		testsupport.Eventually(t, handOffBound, "the first run", func() bool { return runs.Load() == 1 })
	})

	t.Run("three instances started together run it once in all", func(t *testing.T) {
		runs, asked, ins := start(t, "immediate-three", 3)
		testsupport.Eventually(t, handOffBound, "every instance asked", func() bool {
			for _, a := range asked {
				if a.asked.Load() == 0 {
					return false
				}
			}
			return true
		})
		for _, in := range ins {
			in.stop() // no run under way after this
		}
		var leaders int32
		for _, a := range asked {
			leaders += a.leader.Load()
		}
		assert.EqualValues(t, 1, leaders, "one instance was told it leads")
		assert.EqualValues(t, 1, runs.Load(), "the job ran once in all")
	})
}
