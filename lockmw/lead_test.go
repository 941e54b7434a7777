package lockmw_test

import (
	"context"
	"errors"
	"sync"
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

// A leader that finishes steps down: Lead returns fn's error and the next
// standby leads at once (a hand-off, not an expiry: well within the 30 s
// watchdog timeout).
func TestLeadStepsDownToTheStandby(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	hooks := lockmw.Hooks{Metadata: func(context.Context, string) string { return "instance-a" }}
	a := locktest.NewOn(t, srv, lockmw.WithHooks(hooks))
	b := locktest.NewOn(t, srv)
	leading, finish := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		errA <- lockmw.Lead(ctx, a.Mutex("lead-stepdown"), func(lead context.Context) error {
			close(leading)
			<-finish
			return errors.New("a's work is done")
		})
	}()
	testsupport.Recv(t, leading, 10*time.Second, "a leads")
	testsupport.Eventually(t, 10*time.Second, "a's metadata stored", func() bool {
		h, ok, err := b.Mutex("lead-stepdown").Holder(ctx)
		return err == nil && ok && h.Metadata == "instance-a"
	})
	h, ok, err := b.Mutex("lead-stepdown").Holder(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Regexp(t, "^"+a.ID()+`:\d+$`, h.Field, "the observer sees a's field")
	assert.Greater(t, h.TTL, time.Duration(0))

	bLeads := make(chan time.Time, 1)
	errB := make(chan error, 1)
	go func() {
		errB <- lockmw.Lead(ctx, b.Mutex("lead-stepdown"), func(context.Context) error {
			bLeads <- time.Now()
			return nil
		})
	}()
	testsupport.Eventually(t, 10*time.Second, "b queued", func() bool {
		return srv.Client().ZCard(ctx, "rlock_queue:{lead-stepdown}").Val() == 1
	})
	stepDown := time.Now()
	close(finish)
	assert.EqualError(t, testsupport.Recv(t, errA, 10*time.Second, "a's Lead"), "a's work is done")
	took := testsupport.Recv(t, bLeads, 20*time.Second, "b leads").Sub(stepDown)
	assert.Less(t, took, 10*time.Second, "handed over, not left to expire (30 s)")
	require.NoError(t, testsupport.Recv(t, errB, 10*time.Second, "b's Lead"))
	_, ok, err = b.Mutex("lead-stepdown").Holder(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nobody leads once both stepped down")
}

// A leader that loses its lock is told (its context ends with ErrLockLost)
// and campaigns again once fn returns.
func TestLeadCampaignsAgainAfterALoss(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(1500*time.Millisecond))
	terms := make(chan context.Context, 2)
	var n atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- lockmw.Lead(ctx, c.Mutex("lead-lost"), func(lead context.Context) error {
			terms <- lead
			if n.Add(1) == 2 {
				return nil // the second term steps down
			}
			<-lead.Done()
			return context.Cause(lead)
		})
	}()
	first := testsupport.Recv(t, terms, 10*time.Second, "the first term")
	_, err := locktest.NewOn(t, srv).Mutex("lead-lost").ForceUnlock(ctx)
	require.NoError(t, err)
	testsupport.Done(t, first, 10*time.Second, "the lost term's context")
	assert.ErrorIs(t, context.Cause(first), lockmw.ErrLockLost)
	testsupport.Recv(t, terms, 10*time.Second, "the second term")
	require.NoError(t, testsupport.Recv(t, done, 10*time.Second, "Lead"))
}

// When ctx ends, Lead waits for fn, releases, and returns ctx's cause joined
// with fn's different error.
func TestLeadEndsWithItsContext(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	stop := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(testsupport.Ctx(t))
	leading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- lockmw.Lead(ctx, c.Mutex("lead-ctx"), func(lead context.Context) error {
			close(leading)
			<-lead.Done()
			return errors.New("fn saw the end")
		})
	}()
	testsupport.Recv(t, leading, 10*time.Second, "it leads")
	cancel(stop)
	err := testsupport.Recv(t, done, 10*time.Second, "Lead")
	assert.ErrorIs(t, err, stop)
	assert.ErrorContains(t, err, "fn saw the end")
	locked, err := c.Mutex("lead-ctx").IsLocked(testsupport.Ctx(t))
	require.NoError(t, err)
	assert.False(t, locked, "released")
}

// Bad input and what retrying cannot fix return at once; transient Redis
// errors while campaigning are retried until Redis answers.
func TestLeadBadInputAndRedisErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	ok := func(context.Context) error { return nil }
	assert.ErrorIs(t, lockmw.Lead(ctx, nil, ok), lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, lockmw.Lead(ctx, c.Mutex("x"), nil), lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, lockmw.Lead(ctx, c.Mutex(""), ok), lockmw.ErrInvalidName)

	rdb := srv.NewClient()
	var attempts atomic.Int64
	rdb.AddHook(countScripts{&attempts}) // outside the failing hook: counts the failed ones
	fail := &locktest.FailHook{}
	fail.On.Store(true)
	rdb.AddHook(fail)
	f := locktest.New(t, rdb)
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- lockmw.Lead(ctx, f.Mutex("lead-redis-down"), func(context.Context) error {
			close(led)
			return nil
		})
	}()
	testsupport.Eventually(t, 10*time.Second, "a few failed campaigns", func() bool { return attempts.Load() >= 3 })
	select {
	case <-led:
		t.Fatal("led while Redis failed")
	default:
	}
	fail.On.Store(false)
	testsupport.Recv(t, led, 20*time.Second, "it leads once Redis answers")
	require.NoError(t, testsupport.Recv(t, done, 10*time.Second, "Lead"))

	// What trying again cannot fix ends the campaign with the error, as it
	// ends a waiting Lock: a key of another type under the lock's name.
	require.NoError(t, srv.Client().Set(ctx, "lead-wrongtype", "not a lock", 0).Err())
	go func() {
		done <- lockmw.Lead(ctx, c.Mutex("lead-wrongtype"), func(context.Context) error {
			t.Error("led on a string key")
			return nil
		})
	}()
	err := testsupport.Recv(t, done, 20*time.Second, "Lead returns on WRONGTYPE")
	assert.True(t, redis.HasErrorPrefix(err, "WRONGTYPE"), "%v", err)
}

// A leader cut off from Redis (a pause, as far as Redis can tell) learns it
// lost the lock no later than its successor leads, and with WithFencing its
// token is older than the successor's, so a resource that keeps the highest
// token it has seen refuses the old leader's late write. Once Redis answers
// again, the old leader campaigns again and leads after the successor with a
// newer token still.
func TestLeadPausedLeaderIsFencedOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name, watchdog = "lead-fenced", 600 * time.Millisecond
	var cut locktest.FailHook
	rdbA := srv.NewClient() // default options: the subject is a fault
	rdbA.AddHook(&cut)
	a := locktest.New(t, rdbA, lockmw.WithWatchdogTimeout(watchdog))
	b := locktest.New(t, srv.NewClient(), lockmw.WithWatchdogTimeout(watchdog))

	var resource fencedResource
	terms := make(chan term, 4)
	lead := func(c *lockmw.Client, who string) func() error {
		return func() error {
			m := c.Mutex(name, lockmw.WithFencing())
			return lockmw.Lead(ctx, m, func(lead context.Context) error {
				token, ok := m.Token(lead)
				assert.True(t, ok, "a fenced term has a token")
				terms <- term{who: who, token: token, lead: lead}
				<-lead.Done()
				return nil
			})
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- lead(a, "a")() }()
	first := testsupport.Recv(t, terms, 10*time.Second, "a leads")
	require.Equal(t, "a", first.who)
	require.True(t, resource.write(first.token), "the leader writes")
	go func() { errs <- lead(b, "b")() }()

	cut.On.Store(true) // a's renewals fail from now on
	second := testsupport.Recv(t, terms, 20*time.Second, "b takes over once a's lock expires")
	require.Equal(t, "b", second.who)
	require.Error(t, first.lead.Err(), "a learned it lost the lock no later than b leads")
	assert.ErrorIs(t, context.Cause(first.lead), lockmw.ErrLockLost)
	assert.Greater(t, second.token, first.token, "the successor's token is newer")
	require.True(t, resource.write(second.token), "the successor writes")
	assert.False(t, resource.write(first.token), "the old leader's late write is refused")

	cut.On.Store(false)
	testsupport.Eventually(t, 10*time.Second, "a campaigns again (queued behind b)", func() bool {
		return srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Val() == 1
	})
	require.NoError(t, b.Close()) // b's term ends (ErrClosed): its Lead returns, a leads
	third := testsupport.Recv(t, terms, 20*time.Second, "a leads again")
	assert.Equal(t, "a", third.who)
	assert.Greater(t, third.token, second.token)
	assert.ErrorIs(t, testsupport.Recv(t, errs, 10*time.Second, "b's Lead"), lockmw.ErrClosed)
}

// A term of a test's Lead: who leads, its fencing token, its context.
type term struct {
	who   string
	token int64
	lead  context.Context
}

// fencedResource accepts a write only with a token at least as new as every
// token it has seen, as a storage system that checks fencing tokens does.
type fencedResource struct {
	mu      sync.Mutex
	highest int64
}

func (r *fencedResource) write(token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		return false
	}
	r.highest = token
	return true
}

// WithFirstAttempt reports the campaign's first attempt once: nil before
// fn runs when it won; ErrNotAcquired (a *BusyError) when another leads,
// after which Lead waits in the queue and leads when the leader steps down.
func TestLeadReportsItsFirstAttempt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	first := make(chan error, 2) // a second report would be a defect: checked below
	var reports atomic.Int32
	leading, finish := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		errA <- lockmw.Lead(ctx, c.Mutex("lead-first"), func(context.Context) error {
			assert.EqualValues(t, 1, reports.Load(), "the win is reported before fn runs")
			close(leading)
			<-finish
			return nil
		}, lockmw.WithFirstAttempt(func(err error) { reports.Add(1); first <- err }))
	}()
	require.NoError(t, testsupport.Recv(t, first, 10*time.Second, "a's first attempt"))
	testsupport.Recv(t, leading, 10*time.Second, "a leads")

	standby := make(chan error, 2)
	bLeads := make(chan struct{})
	errB := make(chan error, 1)
	go func() {
		errB <- lockmw.Lead(ctx, locktest.NewOn(t, srv).Mutex("lead-first"), func(context.Context) error {
			close(bLeads)
			return nil
		}, nil, lockmw.WithFirstAttempt(func(err error) { standby <- err }))
	}()
	err := testsupport.Recv(t, standby, 10*time.Second, "b's first attempt")
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	_, busy := errors.AsType[*lockmw.BusyError](err)
	assert.True(t, busy, "a busy first attempt is a *BusyError: %v", err)
	close(finish) // a steps down: b, queued, leads
	require.NoError(t, testsupport.Recv(t, errA, 10*time.Second, "a's Lead"))
	testsupport.Recv(t, bLeads, 10*time.Second, "b leads after a")
	require.NoError(t, testsupport.Recv(t, errB, 10*time.Second, "b's Lead"))
	assert.Empty(t, first, "reported once")
	assert.Empty(t, standby, "reported once")
}
