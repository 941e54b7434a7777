package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The go-redis clients of these tests have default options, as users build
// them: ContextTimeoutEnabled is false, so go-redis itself would wait for its
// read timeout (5 s) on a paused server whatever the context says.
const (
	callDeadline  = 300 * time.Millisecond
	releaseBound  = 500 * time.Millisecond // WithReleaseTimeout of these tests
	goRedisReadTO = 3 * time.Second        // where the wrong behaviour lands
)

func defaultOptions(o *redis.Options)               { o.ContextTimeoutEnabled = false }
func defaultClusterOptions(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = false }
func defaultFailoverOptions(o *redis.FailoverOptions) {
	o.ContextTimeoutEnabled = false
}

// goRedisOptionSets are the go-redis options of a test whose subject is a
// deadline or a fault: as the test helpers preset them, and as users build
// clients.
var goRedisOptionSets = []struct {
	name string
	mod  func(*redis.Options)
}{
	{"with ContextTimeoutEnabled", func(*redis.Options) {}},
	{"with default go-redis options", defaultOptions},
}

// pausedTopology is a deployment whose lock node the test can pause.
type pausedTopology struct {
	name  string
	start func(t *testing.T) (rdb redis.UniversalClient, node func(key string) *redistest.Server)
}

var pausedTopologies = []pausedTopology{
	{"a single node", func(t *testing.T) (redis.UniversalClient, func(string) *redistest.Server) {
		srv := redistest.Start(t)
		return srv.NewClient(defaultOptions), func(string) *redistest.Server { return srv }
	}},
	{"a failover client", func(t *testing.T) (redis.UniversalClient, func(string) *redistest.Server) {
		s := redistest.StartSentinel(t, 1, 1)
		for _, addr := range s.SentinelAddrs() { // the pauses are faults of the client's calls, not of the master
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			require.NoError(t, sc.Set(testsupport.Ctx(t), s.MasterName, "down-after-milliseconds", "60000").Err())
			_ = sc.Close()
		}
		master, err := s.CurrentMaster(testsupport.Ctx(t))
		require.NoError(t, err)
		return s.Client(defaultFailoverOptions), func(string) *redistest.Server { return master }
	}},
	{"a cluster client", func(t *testing.T) (redis.UniversalClient, func(string) *redistest.Server) {
		cl := redistest.StartCluster(t, 3, 0)
		return cl.NewClient(defaultClusterOptions), func(key string) *redistest.Server {
			srv, err := cl.MasterFor(testsupport.Ctx(t), key)
			require.NoError(t, err)
			return srv
		}
	}},
}

// timedCall runs call with a context of callDeadline, srv paused (when not
// nil), and checks that it ended with the deadline, before go-redis's read
// timeout would have ended it; it logs the overrun. The pause is short, so
// that Sentinel does not fail over.
func timedCall(t *testing.T, srv *redistest.Server, what string, call func(ctx context.Context) error) {
	t.Helper()
	if srv != nil {
		require.NoError(t, srv.Pause())
		defer func() { require.NoError(t, srv.Resume()) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	took := time.Since(start)
	assert.ErrorIs(t, err, context.DeadlineExceeded, what)
	assert.Less(t, took, goRedisReadTO, "%s returns at its deadline, not at go-redis's read timeout", what)
	t.Logf("%s: returned %v after its deadline", what, took-callDeadline)
}

func TestPausedServerCallsKeepTheirDeadline(t *testing.T) {
	t.Parallel()
	for _, tp := range pausedTopologies {
		t.Run("on "+tp.name, func(t *testing.T) {
			t.Parallel()
			rdb, node := tp.start(t)
			c := locktest.New(t, rdb, lockmw.WithReleaseTimeout(releaseBound))
			m, mh := c.Mutex("{paused-deadline}"), c.Mutex("{paused-deadline}-held")
			require.Equal(t, node(m.Name()), node(mh.Name()), "one slot's master")
			h := locktest.MustLock(t, m, testsupport.Ctx(t)) // past the RESTORE probe, connections pooled
			require.NoError(t, m.Unlock(h))
			held := locktest.MustLock(t, mh, testsupport.Ctx(t))
			inner := locktest.MustLock(t, mh, held)

			srv := node(m.Name())

			timedCall(t, srv, "Lock", func(ctx context.Context) error { _, err := m.Lock(ctx); return err })
			timedCall(t, srv, "TryLock(wait 0)", func(ctx context.Context) error { _, err := m.TryLock(ctx, 0, 0); return err })
			timedCall(t, srv, "TryLock(Forever)", func(ctx context.Context) error {
				_, err := m.TryLock(ctx, lockmw.Forever, 0)
				return err
			})
			timedCall(t, srv, "re-entering Lock", func(ctx context.Context) error {
				ctx, cancel := context.WithDeadline(held, deadlineOf(ctx))
				defer cancel()
				_, err := mh.Lock(ctx)
				return err
			})
			timedCall(t, srv, "ForceUnlock", func(ctx context.Context) error { _, err := m.ForceUnlock(ctx); return err })
			timedCall(t, srv, "IsLocked", func(ctx context.Context) error { _, err := m.IsLocked(ctx); return err })
			timedCall(t, srv, "TTL", func(ctx context.Context) error { _, err := m.TTL(ctx); return err })
			timedCall(t, srv, "HoldCount", func(ctx context.Context) error {
				ctx, cancel := context.WithDeadline(held, deadlineOf(ctx))
				defer cancel()
				_, err := mh.HoldCount(ctx)
				return err
			})
			timedCall(t, srv, "WithLock", func(ctx context.Context) error {
				return lockmw.WithLock(ctx, m, func(context.Context) error { return nil })
			})

			require.NoError(t, srv.Pause())
			start := time.Now()
			err := mh.Unlock(inner)
			took := time.Since(start)
			require.Error(t, err, "Redis does not answer")
			assert.Less(t, took, goRedisReadTO, "Unlock returns at its release timeout")
			t.Logf("Unlock: returned %v after its release timeout", took-releaseBound)

			require.NoError(t, srv.Resume())
			// A cluster whose node was paused again and again may call it
			// failed for a moment (CLUSTERDOWN, nothing run): retry then.
			testsupport.Eventually(t, reservePatience, "a retry releases the inner level", func() bool {
				err := mh.Unlock(inner)
				if err != nil && (strings.Contains(err.Error(), "CLUSTERDOWN") || errors.Is(err, context.DeadlineExceeded)) {
					return false // a retry that timed out on a loaded machine is retried too
				}
				require.NoError(t, err, "a retry releases the inner level")
				return true
			})
			require.NoError(t, mh.Unlock(held))
			// A hang guard, not a time limit: the undo runs in the background,
			// after the node answers again (a cluster that called it failed
			// answers CLUSTERDOWN for a while), on a loaded machine.
			testsupport.Eventually(t, reservePatience, "the abandoned re-entry is undone", func() bool {
				locked, err := mh.IsLocked(context.Background())
				return err == nil && !locked
			})
			testsupport.Eventually(t, reservePatience, "the abandoned acquisitions are undone", func() bool {
				locked, err := m.IsLocked(context.Background())
				return err == nil && !locked
			})
			h, err = m.TryLock(testsupport.Ctx(t), 0, 0)
			require.NoError(t, err, "nothing left held by the abandoned calls")
			require.NoError(t, m.Unlock(h))
		})
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// An acquisition (the RESTORE of the fast path, or the acquire script)
// whose reply never came before its deadline, executed when the server
// answers again, is undone within a second of that.
func TestAbandonedAcquisitionIsUndoneWhenTheServerAnswers(t *testing.T) {
	t.Parallel()
	for _, contended := range []bool{false, true} {
		name := map[bool]string{false: "on a free name (RESTORE)", true: "on a name recently contended (the script)"}[contended]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := srv.NewClient(defaultOptions)
			m := locktest.New(t, rdb).Mutex("abandoned-in-flight")
			other := locktest.New(t, srv.NewClient(defaultOptions)).Mutex("abandoned-in-flight")
			h := locktest.MustLock(t, m, testsupport.Ctx(t)) // past the RESTORE probe
			require.NoError(t, m.Unlock(h))
			if contended { // a busy attempt turns m's fast path off for the name a while
				h := locktest.MustLock(t, other, testsupport.Ctx(t))
				_, err := m.TryLock(testsupport.Ctx(t), 0, 0)
				require.ErrorIs(t, err, lockmw.ErrNotAcquired)
				require.NoError(t, other.Unlock(h))
			}

			timedCall(t, srv, "Lock", func(ctx context.Context) error { _, err := m.Lock(ctx); return err })
			resumed := time.Now()
			testsupport.Eventually(t, reservePatience, "the late acquisition is undone", func() bool {
				n, err := rdb.Exists(context.Background(), m.Name()).Result()
				return err == nil && n == 0
			})
			t.Logf("undone %v after the server answered again", time.Since(resumed))
			h, err := other.TryLock(testsupport.Ctx(t), 0, 0)
			require.NoError(t, err, "another client takes it at once")
			require.NoError(t, other.Unlock(h))
		})
	}
}

// holdRestoreHook holds the next RESTORE back until release is closed, then
// sends it whatever its context says, as a command already written to the
// socket is executed; it counts the scripts that completed meanwhile and
// records the RESTORE's answer.
type holdRestoreHook struct {
	armed   atomic.Bool
	release chan struct{}
	scripts atomic.Int32 // EVAL/EVALSHA completed while the RESTORE was held
	sent    chan error   // the held RESTORE's answer
}

func (h *holdRestoreHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdRestoreHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "restore" && h.armed.CompareAndSwap(true, false) {
			<-h.release
			err := next(context.WithoutCancel(ctx), cmd)
			h.sent <- err
			return err
		}
		err := next(ctx, cmd)
		if n := cmd.Name(); n == "eval" || n == "evalsha" {
			h.scripts.Add(1)
		}
		return err
	}
}

func (h *holdRestoreHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The clean-up of an abandoned acquisition may run before the acquisition
// itself reaches Redis: the acquisition is undone again when its reply
// arrives. With batching (the default) the clean-up waits for the round
// trips under way instead, so it runs after the late RESTORE.
func TestAcquisitionExecutedAfterItsCleanUpIsUndone(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching %t", batching), func(t *testing.T) {
			t.Parallel()
			testLateAcquisitionUndone(t, batching)
		})
	}
}

func testLateAcquisitionUndone(t *testing.T, batching bool) {
	srv := redistest.Start(t)
	hook := &holdRestoreHook{release: make(chan struct{}), sent: make(chan error, 1)}
	rdb := srv.NewClient(defaultOptions)
	rdb.AddHook(hook)
	var opts []lockmw.Option
	if !batching {
		opts = append(opts, lockmw.WithoutBatching())
	}
	m := locktest.New(t, rdb, opts...).Mutex("late-restore")
	h := locktest.MustLock(t, m, testsupport.Ctx(t)) // past the RESTORE probe
	require.NoError(t, m.Unlock(h))

	hook.armed.Store(true)
	scripts := hook.scripts.Load()
	timedCall(t, nil, "Lock", func(ctx context.Context) error { _, err := m.Lock(ctx); return err })
	if !batching {
		testsupport.Eventually(t, 5*time.Second, "the clean-up runs", func() bool { return hook.scripts.Load() > scripts })
	}
	close(hook.release)
	require.NoError(t, <-hook.sent, "the late RESTORE took the lock")
	sent := time.Now()
	testsupport.Eventually(t, reservePatience, "the late acquisition is undone", func() bool {
		n, err := rdb.Exists(context.Background(), m.Name()).Result()
		return err == nil && n == 0
	})
	t.Logf("undone %v after the late RESTORE's reply", time.Since(sent))
}

// An Unlock whose release timeout outlasts the client's read timeout runs on
// the caller's goroutine (no goroutine per call) with a deadline one read
// timeout earlier: go-redis, which does not honour the context's deadline
// here, starts no attempt after it, so the last read ends within the
// release timeout whatever go-redis's retry policy (9.23 gives up after two
// read timeouts on a paused server, with or without the earlier deadline).
func TestPausedServerInlineUnlockKeepsItsTimeout(t *testing.T) {
	t.Parallel()
	const readTO, releaseTO = time.Second, 3 * time.Second
	srv := redistest.Start(t)
	rdb := srv.NewClient(defaultOptions, func(o *redis.Options) { o.ReadTimeout = readTO })
	c := locktest.New(t, rdb, lockmw.WithReleaseTimeout(releaseTO))
	m := c.Mutex("inline-unlock")
	h := locktest.MustLock(t, m, testsupport.Ctx(t))
	require.NoError(t, srv.Pause())
	start := time.Now()
	err := m.Unlock(h)
	took := time.Since(start)
	require.NoError(t, srv.Resume())
	require.Error(t, err, "Redis does not answer")
	assert.Less(t, took, releaseTO, "Unlock returns within its release timeout")
	t.Logf("Unlock on a paused server: returned after %v (release timeout %v, read timeout %v)", took, releaseTO, readTO)
}
