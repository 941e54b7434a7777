package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callLog is a go-redis hook that records when each command or pipeline
// sent through a client began and returned, and whether the master was
// heard: it answered, or the read timed out. A call that failed on the
// client's side (its context cancelled, say) was not.
type callLog struct {
	mu    sync.Mutex
	calls []*loggedCall
}

type loggedCall struct {
	began, returned time.Time
	heard           bool
}

func (l *callLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *callLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c := l.begin()
		err := next(ctx, cmd)
		l.end(c, err)
		return err
	}
}

func (l *callLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c := l.begin()
		err := next(ctx, cmds)
		l.end(c, err)
		return err
	}
}

func (l *callLog) begin() *loggedCall {
	c := &loggedCall{began: time.Now()}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return c
}

func (l *callLog) end(c *loggedCall, err error) {
	var re redis.Error
	var ne net.Error
	heard := err == nil || errors.As(err, &re) || (errors.As(err, &ne) && ne.Timeout())
	l.mu.Lock()
	c.returned, c.heard = time.Now(), heard
	l.mu.Unlock()
}

// during counts the calls that began in [from, to] and how many of them
// had heard the master by to.
func (l *callLog) during(from, to time.Time) (began, heard int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.calls {
		if c.began.Before(from) || c.began.After(to) {
			continue
		}
		began++
		if c.heard && !c.returned.After(to) {
			heard++
		}
	}
	return began, heard
}

// pending counts the calls that have not returned.
func (l *callLog) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.returned.IsZero() {
			n++
		}
	}
	return n
}

// timed runs f and returns when it began and returned.
func timed(f func()) (began, returned time.Time) {
	began = time.Now()
	f()
	return began, time.Now()
}

// assertNotWaitedFor checks that the operation that ran from began to
// returned did not wait for the late master: no request sent to it
// meanwhile was answered, or timed out, by then.
func assertNotWaitedFor(t *testing.T, late *callLog, what string, began, returned time.Time) {
	t.Helper()
	_, heard := late.during(began, returned)
	assert.Zero(t, heard, "%s returned before the late master answered or timed out (%v)", what, returned.Sub(began))
}

// renewals counts the RenewalOK outcomes of the name, with the longest
// renewal round, and keeps every round's outcome for the name for a
// failure's message.
type renewals struct {
	name    string
	mu      sync.Mutex
	n       int
	longest time.Duration
	rounds  []string
	ch      chan struct{}
}

func newRenewals(name string) *renewals { return &renewals{name: name, ch: make(chan struct{}, 100)} }

func (r *renewals) hook(e lockmw.RenewalEvent) {
	for _, l := range e.Locks {
		if l.Name != r.name {
			continue
		}
		r.mu.Lock()
		r.rounds = append(r.rounds, fmt.Sprintf("sent %s took %v: %v (err %v)", e.Sent.Format("15:04:05.000"), e.Duration, l.Outcome, e.Err))
		ok := l.Outcome == lockmw.RenewalOK
		if ok {
			r.n++
			r.longest = max(r.longest, e.Duration)
		}
		r.mu.Unlock()
		if ok {
			r.ch <- struct{}{}
		}
	}
}

// await waits for the next renewal of the hold h, and fails the test when
// h ends first or none comes within a hang guard, with every round's
// outcome so far: a hold lost on a starved machine says so, with why.
func (r *renewals) await(t *testing.T, h context.Context, what string) {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-r.ch:
		return
	case <-h.Done():
		t.Fatalf("the hold ended before %s: %v; its renewal rounds: %s", what, context.Cause(h), r.report())
	case <-timer.C:
		t.Fatalf("no %s within 30s; the renewal rounds: %s", what, r.report())
	}
}

func (r *renewals) report() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rounds) == 0 {
		return "none"
	}
	return strings.Join(r.rounds, "; ")
}

// defaultQuorum starts three masters and returns them with go-redis clients
// of default options (a 5 s read timeout), as users build them; the third
// client's calls are logged.
func defaultQuorum(t *testing.T, third func(*redistest.Server) string) ([]*redistest.Server, []redis.UniversalClient, *callLog) {
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient()
	}
	if third != nil {
		rdb := redis.NewClient(&redis.Options{Addr: third(srvs[2])})
		t.Cleanup(func() { _ = rdb.Close() })
		rdbs[2] = rdb
	}
	late := &callLog{}
	rdbs[2].AddHook(late)
	return srvs, rdbs, late
}

// A quorum of masters reached with go-redis clients of default options, as
// users build them, each connection warm; then one master is paused. Lock,
// TryLock, every renewal and Unlock return at the pace of the two that
// answer, without waiting for the paused one's read timeout (5 s); a hold
// with a 3 s watchdog (renewed every second) stays held over four renewals.
// When the master resumes it runs the acquisition and the end it buffered,
// in either order, and keeps nothing.
func TestQuorumDefaultOptionsPausedMaster(t *testing.T) {
	t.Parallel()
	srvs, rdbs, late := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	const name = "q-default"
	rn := newRenewals(name)
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	other := newQuorum(t, rdbs)
	m := c.Mutex(name)
	h := locktest.MustLock(t, m, ctx) // every connection warm
	_, err := other.Mutex(name).TryLock(ctx, 0, 0)
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	require.NoError(t, m.Unlock(h))

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	began, returned := timed(func() { h = locktest.MustLock(t, m, ctx) })
	assertNotWaitedFor(t, late, "Lock", began, returned)
	began, returned = timed(func() {
		_, err = other.Mutex(name).TryLock(ctx, 0, 0)
	})
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "held on the two masters that answer")
	assertNotWaitedFor(t, late, "TryLock", began, returned)

	for i := range 4 {
		rn.await(t, h, "a renewal")
		require.NoError(t, h.Err(), "held after %d renewals: %v", i+1, context.Cause(h))
	}
	rn.mu.Lock()
	assert.Less(t, rn.longest, 5*time.Second, "no renewal waited for the paused master's read timeout")
	rn.mu.Unlock()

	began, returned = timed(func() { require.NoError(t, m.Unlock(h)) })
	assertNotWaitedFor(t, late, "Unlock", began, returned)
	for i := range 2 {
		assert.False(t, keyOn(t, srvs[i], name), "released on master %d", i)
	}

	require.NoError(t, srvs[2].Resume())
	testsupport.Eventually(t, 30*time.Second, "every request to the resumed master answered", func() bool { return late.pending() == 0 })
	assert.False(t, keyOn(t, srvs[2], name), "the resumed master ran the late acquisition and its end: nothing kept")
	h2, err := other.Mutex(name).TryLock(ctx, 0, 0)
	require.NoError(t, err, "free on every master")
	require.NoError(t, other.Mutex(name).Unlock(h2))
}

// One master answers 2 s late (every request reaches it 2 s after it is
// sent: a far server, as a script's clock sees it), within go-redis's
// default read timeout. Lock and Unlock return without waiting for it; its
// late acquisition lands while the hold lives and is renewed with it, and
// the release that follows removes it. A hold released before its late
// acquisition lands leaves nothing there either.
func TestQuorumSlowMaster(t *testing.T) {
	t.Parallel()
	var proxy *faultproxy.Proxy
	srvs, rdbs, late := defaultQuorum(t, func(s *redistest.Server) string {
		var err error
		proxy, err = faultproxy.Start(s.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		return proxy.Addr()
	})
	ctx := testsupport.Ctx(t)
	const name = "q-slow"
	rn := newRenewals(name)
	const watchdog = 6 * time.Second // renewals every 2 s, each landing 2 s late
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(watchdog), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	m := c.Mutex(name)
	require.NoError(t, m.Unlock(locktest.MustLock(t, m, ctx))) // every connection warm
	testsupport.Eventually(t, 10*time.Second, "warmed up", func() bool { return late.pending() == 0 })
	proxy.SetRequestLatency(2 * time.Second)

	var h context.Context
	began, returned := timed(func() { h = locktest.MustLock(t, m, ctx) })
	assertNotWaitedFor(t, late, "Lock", began, returned)
	testsupport.Eventually(t, 10*time.Second, "the late acquisition landed", func() bool { return keyOn(t, srvs[2], name) })
	landed := time.Now()
	for n := 0; n < 4 || time.Since(landed) < watchdog+time.Second; n++ { // past the TTL it landed with
		rn.await(t, h, "a renewal")
	}
	require.NoError(t, h.Err(), "held over four renewals: %v", context.Cause(h))
	assert.True(t, keyOn(t, srvs[2], name), "the slow master's copy is renewed with the hold")
	began, returned = timed(func() { require.NoError(t, m.Unlock(h)) })
	assertNotWaitedFor(t, late, "Unlock", began, returned)
	testsupport.Eventually(t, 30*time.Second, "every request to the slow master answered", func() bool { return late.pending() == 0 })
	assert.False(t, keyOn(t, srvs[2], name), "released on the slow master too")

	// A hold that ends before its acquisition reaches the slow master.
	h = locktest.MustLock(t, m, ctx)
	require.NoError(t, m.Unlock(h))
	testsupport.Eventually(t, 30*time.Second, "every request to the slow master answered", func() bool { return late.pending() == 0 })
	assert.False(t, keyOn(t, srvs[2], name), "the late acquisition was undone")
	for i := range 2 {
		assert.False(t, keyOn(t, srvs[i], name), "released on master %d", i)
	}
}

// A waiter of a quorum with a paused master, whose subscription there has
// no connection yet (the hub's first one waits for the paused master's read
// timeout): it joins the two other masters' hubs, and the release that
// reaches them wakes it. The holder's renewals go on meanwhile.
func TestQuorumPausedMasterWaiter(t *testing.T) {
	t.Parallel()
	srvs, rdbs, late := defaultQuorum(t, nil)
	ctx := testsupport.Ctx(t)
	const name = "q-paused-waiter"
	rn := newRenewals(name)
	// Renewed every 2 s: a hold that a starved machine keeps from renewing
	// for a few seconds stays held. With 3 s, a fresh clone's make test once
	// saw no renewal for 30 s, most likely a hold lost to starvation (await
	// now says which).
	c := newQuorum(t, rdbs, lockmw.WithWatchdogTimeout(6*time.Second), lockmw.WithHooks(lockmw.Hooks{Renewal: rn.hook}))
	other := newQuorum(t, rdbs)
	m := c.Mutex(name)
	require.NoError(t, m.Unlock(locktest.MustLock(t, m, ctx))) // every pooled connection warm

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	h := locktest.MustLock(t, m, ctx)
	type result struct {
		h   context.Context
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		wh, err := other.Mutex(name).Lock(ctx)
		got <- result{wh, err, time.Now()}
	}()
	testsupport.Eventually(t, 10*time.Second, "the waiter subscribed on the masters that answer", func() bool {
		n, err := srvs[0].Client().PubSubNumSub(ctx, "redisson_lock__channel:{"+name+"}").Result()
		return err == nil && n["redisson_lock__channel:{"+name+"}"] == 1
	})
	for range 2 {
		rn.await(t, h, "a renewal while the waiter waits")
	}
	require.NoError(t, h.Err(), "the holder keeps its lock: %v", context.Cause(h))
	unlocked := time.Now()
	require.NoError(t, m.Unlock(h))
	r := testsupport.Recv(t, got, 30*time.Second, "the waiter's Lock")
	require.NoError(t, r.err)
	t.Logf("the waiter took the lock %v after the Unlock call", r.at.Sub(unlocked))
	assertNotWaitedFor(t, late, "the hand-off", unlocked, r.at)
	require.NoError(t, other.Mutex(name).Unlock(r.h))
}

// A quorum waiter's hub on a paused master has no connection yet, and a new
// connection's handshake waits for the master's read timeout (30 s here).
// Close does not wait for it, nor does the waiter's Lock, which Close ends.
func TestQuorumCloseWhileJoiningPausedMaster(t *testing.T) {
	t.Parallel()
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient()
	}
	slow := redis.NewClient(&redis.Options{Addr: srvs[2].Addr(), ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = slow.Close() })
	rdbs[2] = slow
	ctx := testsupport.Ctx(t)
	const name = "q-close-paused"
	holder := newQuorum(t, rdbs)
	c := newQuorum(t, rdbs)
	m := holder.Mutex(name)
	for _, r := range rdbs { // a connection each: no acquisition request below waits for a dial
		require.NoError(t, r.Ping(ctx).Err())
	}
	h := locktest.MustLock(t, m, ctx)
	// Lock returns once two masters won; the third may run the holder's
	// request later. c's requests that reach that master first would take
	// the lock there, and the hold would live on the master paused below
	// and one that answers: its Unlock could not be decided without the
	// paused master.
	testsupport.Eventually(t, 10*time.Second, "the holder's acquisition ran on every master", func() bool {
		return keysOn(t, srvs, name) == len(srvs)
	})
	_, err := c.Mutex(name).TryLock(ctx, 0, 0) // every pooled connection warm
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)

	require.NoError(t, srvs[2].Pause())
	t.Cleanup(func() { _ = srvs[2].Resume() })
	got := make(chan error, 1)
	go func() {
		_, err := c.Mutex(name).Lock(ctx)
		got <- err
	}()
	// Both: with one only, Close may come while the waiter still joins the
	// other, and its Lock would wait for the paused master's join.
	testsupport.Eventually(t, 10*time.Second, "the waiter subscribed on the masters that answer", func() bool {
		for _, s := range srvs[:2] {
			n, err := s.Client().PubSubNumSub(ctx, "redisson_lock__channel:{"+name+"}").Result()
			if err != nil || n["redisson_lock__channel:{"+name+"}"] != 1 {
				return false
			}
		}
		return true
	})
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	testsupport.Recv(t, closed, 20*time.Second, "Close, long before the paused master's read timeout")
	err = testsupport.Recv(t, got, 20*time.Second, "the waiter's Lock")
	assert.ErrorIs(t, err, lockmw.ErrClosed)
	require.NoError(t, m.Unlock(h))
}
