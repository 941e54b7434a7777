package ledger

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// long bounds every wait of these tests: a safety net against a hang on a
// loaded machine, never a budget.
const long = time.Minute

// fake is the Ledger the decorator wraps: every method runs body (when set)
// with its context, its name and its account, and returns what body
// returns beside fixed values.
type fake struct {
	body func(ctx context.Context, method, account string) error
}

func (f *fake) run(ctx context.Context, method, account string) error {
	if f.body == nil {
		return nil
	}
	return f.body(ctx, method, account)
}

func (f *fake) Post(ctx context.Context, account string, cents int64) (int64, error) {
	return cents, f.run(ctx, "Post", account)
}

func (f *fake) Settle(ctx context.Context, account string) (int64, error) {
	return 42, f.run(ctx, "Settle", account)
}

func (f *fake) Export(ctx context.Context, e *Export) error { return f.run(ctx, "Export", e.Tenant) }

func (f *fake) Audit(ctx context.Context, account string) (int64, error) {
	return 0, f.run(ctx, "Audit", account)
}

func (f *fake) Rank(ctx context.Context, account string) (int, string, error) {
	return 3, "gold", f.run(ctx, "Rank", account)
}

func (f *fake) Statement(ctx context.Context, account string) (string, error) {
	return "statement", f.run(ctx, "Statement", account)
}

func (f *fake) Close(ctx context.Context, account string) (int64, error) {
	return 0, f.run(ctx, "Close", account)
}

func (f *fake) Reconcile(ctx context.Context, account string) error {
	return f.run(ctx, "Reconcile", account)
}

func (f *fake) Balance(ctx context.Context, account string) (int64, error) {
	return 7, f.run(ctx, "Balance", account)
}

// client is a lockmw.Client on srv over a go-redis client with the default
// options, as users build them.
func client(t *testing.T, srv *redistest.Server, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	rdb := srv.NewClient(func(o *redis.Options) { o.ContextTimeoutEnabled = false })
	return locktest.New(t, rdb, opts...)
}

// waitQueued waits until n waiters are queued in Redis for the lock or
// semaphore with the given keys.
func waitQueued(t *testing.T, srv *redistest.Server, keys layout.Keys, n int64) {
	t.Helper()
	ctx := testsupport.Ctx(t)
	testsupport.Eventually(t, long, "waiters queued on "+keys.Lock, func() bool {
		got, err := srv.Client().ZCard(ctx, keys.Queue).Result()
		require.NoError(t, err)
		return got >= n
	})
}

func TestCallsOnOneKeyRunOneAtATimeAndOtherKeysInParallel(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	entered := map[string]chan struct{}{"a-first": make(chan struct{}), "a-second": make(chan struct{}), "b": make(chan struct{})}
	releaseFirst := make(chan struct{})
	var firstReturned atomic.Bool
	var calls atomic.Int32
	f := &fake{body: func(ctx context.Context, _, account string) error {
		switch n := calls.Add(1); {
		case account == "b":
			close(entered["b"])
		case n == 1:
			close(entered["a-first"])
			<-releaseFirst
			firstReturned.Store(true)
		default:
			assert.True(t, firstReturned.Load(), "the second call on account a ran while the first was inside")
			close(entered["a-second"])
		}
		return nil
	}}
	l := NewLockedLedger(client(t, srv), f)

	done := make(chan error, 2)
	go func() { _, err := l.Post(ctx, "a", 1); done <- err }()
	testsupport.Recv(t, entered["a-first"], long, "the first call on account a")
	go func() { _, err := l.Post(ctx, "a", 2); done <- err }()
	waitQueued(t, srv, layout.Mutex("ledger:post#a"), 1)

	_, err := l.Post(ctx, "b", 3) // runs while the first call on a holds its lock
	require.NoError(t, err)
	testsupport.Recv(t, entered["b"], long, "the call on account b")
	select {
	case <-entered["a-second"]:
		t.Fatal("the second call on account a ran while the first was inside")
	default:
	}

	close(releaseFirst)
	require.NoError(t, testsupport.Recv(t, done, long, "the first call on a"))
	require.NoError(t, testsupport.Recv(t, done, long, "the second call on a"))
	testsupport.Recv(t, entered["a-second"], long, "the second call on account a")
}

func TestManyCallersOfOneKeyNeverOverlap(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var inside, most atomic.Int32
	f := &fake{body: func(context.Context, string, string) error {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runtime.Gosched()
		inside.Add(-1)
		return nil
	}}
	// Two Clients are two owners, like two processes.
	ledgers := []Ledger{NewLockedLedger(client(t, srv), f), NewLockedLedger(client(t, srv), f)}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				_, err := ledgers[i%2].Post(ctx, "shared", 1)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), most.Load(), "calls on one account inside at once")
}

func TestALockedMethodRunsWithTheHoldContextAndReenters(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := client(t, srv)
	var l Ledger
	var depth atomic.Int32
	f := &fake{body: func(hctx context.Context, _, account string) error {
		assert.NotEqual(t, ctx, hctx, "next got the caller's context, not the hold context")
		held, err := c.Mutex("ledger:post#" + account).IsHeld(hctx)
		require.NoError(t, err)
		assert.True(t, held, "next runs without holding the lock")
		if depth.Add(1) == 1 {
			_, err := l.Post(hctx, account, 1) // the hold context re-enters
			return err
		}
		return nil
	}}
	l = NewLockedLedger(c, f)
	got, err := l.Post(ctx, "acct", 5)
	require.NoError(t, err)
	assert.Equal(t, int64(5), got)
	assert.Equal(t, int32(2), depth.Load())
}

func TestAMethodWithoutADirectiveCallsNextDirectly(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	type callerKey struct{}
	ctx = context.WithValue(ctx, callerKey{}, "caller")
	var got context.Context
	f := &fake{body: func(ctx context.Context, method, _ string) error {
		got = ctx
		return nil
	}}
	c := client(t, srv)
	l := NewLockedLedger(c, f)
	n, err := l.Balance(ctx, "acct")
	require.NoError(t, err)
	assert.Equal(t, int64(7), n)
	assert.Equal(t, ctx, got, "Balance did not get the caller's own context")

	// No lock is involved: it runs on after the Client is closed, when the
	// locked methods refuse.
	require.NoError(t, c.Close())
	_, err = l.Balance(ctx, "acct")
	require.NoError(t, err)
	_, err = l.Post(ctx, "acct", 1)
	assert.ErrorIs(t, err, lockmw.ErrClosed)
}

func TestABusyLockReturnsErrNotAcquiredAfterTheWait(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	other := client(t, srv)
	locktest.MustLock(t, other.Mutex("ledger:settle#acct"), ctx)
	called := false
	l := NewLockedLedger(client(t, srv), &fake{body: func(context.Context, string, string) error { called = true; return nil }})

	start := time.Now()
	got, err := l.Settle(ctx, "acct")
	waited := time.Since(start)
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.Zero(t, got, "the result of a call that did not run")
	assert.False(t, called, "next ran without the lock")
	assert.GreaterOrEqual(t, waited, 200*time.Millisecond, "gave up before wait=200ms")
}

func TestALostLockCancelsTheCallsContext(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	// A short watchdog timeout: the holder learns of the loss at its next
	// renewal, a third of it later.
	c := client(t, srv, lockmw.WithWatchdogTimeout(3*time.Second))
	entered := make(chan struct{})
	var cause error
	f := &fake{body: func(hctx context.Context, _, _ string) error {
		close(entered)
		err := testsupport.WaitDone(hctx, long)
		cause = context.Cause(hctx)
		return err
	}}
	l := NewLockedLedger(c, f)
	done := make(chan error, 1)
	go func() { _, err := l.Post(ctx, "acct", 1); done <- err }()
	testsupport.Recv(t, entered, long, "the call under the lock")

	ok, err := client(t, srv).Mutex("ledger:post#acct").ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)

	err = testsupport.Recv(t, done, long, "the call after its lock was lost")
	assert.ErrorIs(t, err, lockmw.ErrLockLost)
	assert.ErrorIs(t, cause, lockmw.ErrLockLost, "the call's context ended for another cause")
}

func TestAPanicReleasesTheLockAndGoesOn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	l := NewLockedLedger(client(t, srv), &fake{body: func(context.Context, string, string) error { panic("boom") }})

	assert.PanicsWithValue(t, "boom", func() { _, _ = l.Post(ctx, "acct", 1) })
	locked, err := client(t, srv).Mutex("ledger:post#acct").IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the lock outlived the panic")
}

func TestAKeyThatCannotBeMadeIsAnErrorAndNextDoesNotRun(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	called := false
	l := NewLockedLedger(client(t, srv), &fake{body: func(context.Context, string, string) error { called = true; return nil }})

	err := l.Export(ctx, nil)
	require.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	assert.EqualError(t, err, "lockmw: invalid argument: Ledger.Export: key reference {e.Tenant}: nil pointer or interface")

	_, err = l.Post(ctx, "bad\x00account", 1)
	require.ErrorIs(t, err, lockmw.ErrInvalidName)
	assert.False(t, called)
}

func TestPermitsLetThatManyCallsInAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	entered := make(chan string, 3)
	release := make(chan struct{})
	f := &fake{body: func(context.Context, string, string) error {
		entered <- "in"
		<-release
		return nil
	}}
	l := NewLockedLedger(client(t, srv), f)
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- l.Export(ctx, &Export{Tenant: "t1"}) }()
	}
	testsupport.Recv(t, entered, long, "the first export")
	testsupport.Recv(t, entered, long, "the second export")
	waitQueued(t, srv, layout.Semaphore("ledger:export#t1"), 1)
	select {
	case <-entered:
		t.Fatal("a third export ran beside two")
	default:
	}
	close(release)
	testsupport.Recv(t, entered, long, "the third export, once a permit was free")
	for range 3 {
		require.NoError(t, testsupport.Recv(t, done, long, "an export"))
	}
}

func TestFencingHandsOutIncreasingTokens(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := client(t, srv)
	for _, tc := range []struct {
		name  string
		token func(hold context.Context, account string) (int64, bool) // a fenced handle's
		call  func(l Ledger, account string) error
	}{
		{"a mutex's (Audit)",
			func(hold context.Context, account string) (int64, bool) {
				return c.Mutex("ledger:audit#"+account, lockmw.WithFencing()).Token(hold)
			},
			func(l Ledger, account string) error { _, err := l.Audit(ctx, account); return err }},
		{"a read-write lock's write side (Close)",
			func(hold context.Context, account string) (int64, bool) {
				return c.RWMutex("ledger:book#"+account, lockmw.WithFencing()).Token(hold)
			},
			func(l Ledger, account string) error { _, err := l.Close(ctx, account); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tokens []int64
			l := NewLockedLedger(c, &fake{body: func(hold context.Context, _, account string) error {
				tok, ok := tc.token(hold, account)
				if !ok {
					return errors.New("no fencing token in the hold context")
				}
				tokens = append(tokens, tok)
				return nil
			}})
			for range 3 {
				require.NoError(t, tc.call(l, "acct"))
			}
			require.Len(t, tokens, 3)
			assert.Less(t, tokens[0], tokens[1])
			assert.Less(t, tokens[1], tokens[2])
		})
	}
}

func TestSeveralResultsComeBackThroughTheLock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	fail := errors.New("ranking failed")
	l := NewLockedLedger(client(t, srv), &fake{body: func(context.Context, string, string) error { return fail }})
	rank, tier, err := l.Rank(ctx, "acct")
	assert.Equal(t, 3, rank)
	assert.Equal(t, "gold", tier)
	assert.Equal(t, fail, err, "next's error, unchanged: nothing happened to the lock")
}

func TestNewLockedLedgerPanicsOnANilClientOrNext(t *testing.T) {
	srv := redistest.Start(t)
	assert.PanicsWithValue(t, "ledger: NewLockedLedger(nil, next): a *lockmw.Client is required", func() { NewLockedLedger(nil, &fake{}) })
	assert.PanicsWithValue(t, "ledger: NewLockedLedger(c, nil): a Ledger is required", func() { NewLockedLedger(client(t, srv), nil) })
}

func TestReadsOfOneBookRunTogetherAndAWriteAlone(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	entered := make(chan string, 3)
	release := make(chan struct{})
	f := &fake{body: func(_ context.Context, method, _ string) error {
		entered <- method
		if method == "Statement" {
			<-release
		}
		return nil
	}}
	// Two Clients are two owners, like two processes.
	a, b := NewLockedLedger(client(t, srv), f), NewLockedLedger(client(t, srv), f)
	done := make(chan error, 3)
	go func() { _, err := a.Statement(ctx, "acct"); done <- err }()
	go func() { _, err := b.Statement(ctx, "acct"); done <- err }()
	assert.Equal(t, "Statement", testsupport.Recv(t, entered, long, "the first read"))
	assert.Equal(t, "Statement", testsupport.Recv(t, entered, long, "the second read, beside the first"))

	go func() { _, err := a.Close(ctx, "acct"); done <- err }()
	waitQueued(t, srv, layout.RWMutex("ledger:book#acct"), 1)
	select {
	case m := <-entered:
		t.Fatalf("%s ran beside two reads", m)
	default:
	}
	close(release)
	assert.Equal(t, "Close", testsupport.Recv(t, entered, long, "the write, once the reads were done"))
	for range 3 {
		require.NoError(t, testsupport.Recv(t, done, long, "a call"))
	}
}

func TestAMinimumHoldKeepsTheLockAfterTheCallReturns(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := client(t, srv)
	l := NewLockedLedger(c, &fake{})
	start := time.Now()
	require.NoError(t, l.Reconcile(ctx, "acct"))
	pttl, err := srv.Client().PTTL(ctx, "ledger:reconcile#acct").Result()
	elapsed := time.Since(start)
	require.NoError(t, err)
	// Released at the call's start plus a minute: what is left lies between
	// a minute less the time since before the call, and a minute.
	assert.LessOrEqual(t, pttl, time.Minute, "kept longer than the minimum hold")
	assert.GreaterOrEqual(t, pttl, time.Minute-elapsed, "released before the minimum hold")
	locked, err := c.Mutex("ledger:reconcile#acct").IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "the lock was released when the call returned")
}

// permits= on a quorum lockmw.Client (three masters, go-redis default
// options): two exports of a tenant run at once, a third waits until one
// ends; while two run, both permits are taken.
func TestPermitsOnAQuorum(t *testing.T) {
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		rdbs[i] = redistest.Start(t).NewClient()
	}
	c := lockmw.NewQuorum(rdbs)
	t.Cleanup(func() { _ = c.Close() })
	ctx := testsupport.Ctx(t)
	entered := make(chan string, 3)
	release := make(chan struct{})
	l := NewLockedLedger(c, &fake{body: func(context.Context, string, string) error {
		entered <- "in"
		<-release
		return nil
	}})
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- l.Export(ctx, &Export{Tenant: "t1"}) }()
	}
	testsupport.Recv(t, entered, long, "the first export")
	testsupport.Recv(t, entered, long, "the second export")
	free, err := c.Semaphore("ledger:export#t1", 2).Available(ctx)
	require.NoError(t, err)
	require.Zero(t, free, "both permits taken: a third export cannot run")
	release <- struct{}{}
	testsupport.Recv(t, entered, long, "the third export, once a permit was free")
	close(release)
	for range 3 {
		require.NoError(t, testsupport.Recv(t, done, long, "an export"))
	}
}
