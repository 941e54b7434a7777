package httpmw_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

// concurrency counts the handlers inside at once, and the most there were.
type concurrency struct{ in, max, all atomic.Int64 }

func (c *concurrency) enter() {
	c.all.Add(1)
	n := c.in.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *concurrency) exit() { c.in.Add(-1) }

// gate is a handler that signals entered and then blocks until open is
// called. Tests defer open: a deferred call runs before the cleanups, among
// them the test server's Close, which waits for its handlers.
type gate struct {
	entered chan struct{}
	open    func()
	opened  chan struct{}
	c       concurrency
}

func newGate(capacity int) *gate {
	g := &gate{entered: make(chan struct{}, capacity), opened: make(chan struct{})}
	g.open = sync.OnceFunc(func() { close(g.opened) })
	return g
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.c.enter()
	defer g.c.exit()
	g.entered <- struct{}{}
	<-g.opened
}

// enteredNow is how many handlers have entered so far.
func (g *gate) enteredNow() int { return len(g.entered) }

func TestLimitRunsAtMostNAtOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const limit, n = 3, 9
	g := newGate(n)
	defer g.open()
	// Two instances, each its own Client, Middleware, mux and server. The short
	// watchdog timeout also makes waiters retry every 300ms, as in
	// TestSerializesARouteAcrossInstances.
	var servers []*httptest.Server
	var locks *lockmw.Client
	for range 2 {
		locks = locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(900*time.Millisecond))
		m := httpmw.New(locks, httpmw.WithPermits(limit), httpmw.WithWait(lockmw.Forever))
		mux := http.NewServeMux()
		mux.Handle("POST /exports/{id}", m.Wrap(g))
		servers = append(servers, routertest.Serve(t, mux))
	}

	replies := make(chan routertest.Reply, n)
	for i := range n {
		go func() {
			replies <- routertest.Send(t.Context(), servers[i%2], "POST", "/exports/"+strconv.Itoa(i))
		}()
	}
	const name = "http:limit:POST /exports/{id}"
	testsupport.Eventually(t, routertest.Patience, "three requests inside and six queued", func() bool {
		return g.enteredNow() == limit && locktest.Queued(t, locks.Redis(), name) == n-limit
	})
	assert.Equal(t, limit, g.enteredNow(), "a request over the limit entered")
	g.open()
	for range n {
		r := testsupport.Recv(t, replies, routertest.Patience, "reply")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}
	assert.EqualValues(t, n, g.c.all.Load())
	assert.EqualValues(t, limit, g.c.max.Load(), "most handlers inside at once")
}

func TestLimitBusy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	const lease = time.Minute
	tests := []struct {
		name string
		opts []httpmw.Option
		// retry is the Retry-After range allowed when the permits were taken
		// within elapsed of the answer.
		retry func(elapsed time.Duration) (lo, hi int)
	}{
		{"without a lease the earliest permit's TTL (the watchdog's)", nil, watchdogTTL},
		{"without a lease the TTL wins over an explicit hint", []httpmw.Option{httpmw.WithRetryAfter(7 * time.Second)}, watchdogTTL},
		{"with a lease the earliest permit's remaining lease wins over the hint",
			[]httpmw.Option{httpmw.WithLease(lease), httpmw.WithRetryAfter(7 * time.Second)},
			func(elapsed time.Duration) (int, int) {
				return int(math.Ceil((lease - elapsed).Seconds())), int(lease / time.Second)
			}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const limit = 3
			g := newGate(limit + 1)
			defer g.open()
			opts := append([]httpmw.Option{httpmw.WithPermits(limit), httpmw.WithWait(0)}, tt.opts...)
			route := "/busy" + strconv.Itoa(i)
			mux := http.NewServeMux()
			mux.Handle("GET "+route, httpmw.New(locks, opts...).Wrap(g))
			s := routertest.Serve(t, mux)

			start := time.Now()
			var held []<-chan routertest.Reply
			for range limit {
				held = append(held, routertest.SendAsync(t.Context(), s, "GET", route))
			}
			testsupport.Eventually(t, routertest.Patience, "three requests inside", func() bool { return g.enteredNow() == limit })
			// Bounded: were it let in, it would block in the gate.
			r := routertest.Send(testsupport.CtxFor(t, routertest.Patience), s, "GET", route)
			elapsed := time.Since(start)
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusConflict, r.Status)
			assert.Contains(t, r.Body, "busy")
			lo, hi := tt.retry(elapsed)
			got, err := strconv.Atoi(r.Header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
			assert.True(t, lo <= got && got <= hi, "Retry-After %d, want %d to %d", got, lo, hi)
			assert.Equal(t, limit, g.enteredNow(), "the fourth request ran")

			g.open()
			for _, ch := range held {
				assert.Equal(t, http.StatusOK, testsupport.Recv(t, ch, routertest.Patience, "reply").Status)
			}
			assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", route).Status, "after the permits came back")
		})
	}
}

func TestLimitClientGoneLeavesTheQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	for _, tc := range []struct {
		name, method, body string
	}{
		{"without a body", "GET", ""},
		{"with a body", "POST", `{"qty":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 2
			pattern := tc.method + " /limited"
			name := "http:limit:" + pattern
			g := newGate(limit + 1)
			defer g.open()
			wrapped := httpmw.New(locks, httpmw.WithPermits(limit), httpmw.WithWait(lockmw.Forever)).Wrap(g)
			served := make(chan struct{}, limit+1)
			mux := http.NewServeMux()
			mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { served <- struct{}{} }()
				wrapped.ServeHTTP(w, r)
			}))
			s := routertest.Serve(t, mux)
			var held []<-chan routertest.Reply
			for range limit {
				held = append(held, routertest.SendAsync(t.Context(), s, tc.method, "/limited"))
			}
			testsupport.Eventually(t, routertest.Patience, "two requests inside", func() bool { return g.enteredNow() == limit })

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan routertest.Reply, 1)
			go func() { got <- routertest.SendBody(ctx, s, tc.method, "/limited", strings.NewReader(tc.body)) }()
			testsupport.Eventually(t, routertest.Patience, "request queued", func() bool { return locktest.Queued(t, locks.Redis(), name) == 1 })
			cancel()
			assert.ErrorIs(t, testsupport.Recv(t, got, routertest.Patience, "client").Err, context.Canceled)
			testsupport.Recv(t, served, routertest.Patience, "the middleware giving up")
			testsupport.Eventually(t, routertest.Patience, "waiter leaving the queue", func() bool { return locktest.Queued(t, locks.Redis(), name) == 0 })
			assert.Equal(t, limit, g.enteredNow(), "the handler ran for a client that left")

			g.open()
			for _, ch := range held {
				assert.Equal(t, http.StatusOK, testsupport.Recv(t, ch, routertest.Patience, "reply").Status)
			}
			sem := locks.Semaphore(name, limit)
			testsupport.Eventually(t, routertest.Patience, "every permit back", func() bool {
				n, err := sem.Available(t.Context())
				return err == nil && n == limit
			})
		})
	}
}

// Rolling deploys mix instances with and without a limit: WithPermits(1) keeps
// the mutex at today's name, a limit above 1 is a semaphore at another name.
func TestLimitNames(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, old := locktest.NewOn(t, srv), locktest.NewOn(t, srv)

	t.Run("WithPermits(1) is today's mutex", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("GET /one", httpmw.New(locks, httpmw.WithPermits(1), httpmw.WithWait(0)).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		s := routertest.Serve(t, mux)
		release := locktest.Hold(t, old, "http:GET /one", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "GET", "/one").Status)
		release()
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/one").Status)
	})

	t.Run("a limit above 1 is a semaphore beside the mutex", func(t *testing.T) {
		g := newGate(1)
		defer g.open()
		mux := http.NewServeMux()
		mux.Handle("GET /three", httpmw.New(locks, httpmw.WithPermits(3), httpmw.WithWait(0)).Wrap(g))
		s := routertest.Serve(t, mux)
		locktest.Hold(t, old, "http:GET /three", 0) // an old instance serving the route
		got := routertest.SendAsync(t.Context(), s, "GET", "/three")
		testsupport.Recv(t, g.entered, routertest.Patience, "handler entering")
		n, err := locks.Semaphore("http:limit:GET /three", 3).Available(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 2, n, "permits left while one request runs")
		g.open()
		assert.Equal(t, http.StatusOK, testsupport.Recv(t, got, routertest.Patience, "reply").Status)
	})

	t.Run("WrapMux limits each pattern", func(t *testing.T) {
		g := newGate(1)
		defer g.open()
		mux := http.NewServeMux()
		mux.Handle("GET /m", g)
		s := routertest.Serve(t, httpmw.New(locks, httpmw.WithPermits(2)).WrapMux(mux))
		got := routertest.SendAsync(t.Context(), s, "GET", "/m")
		testsupport.Recv(t, g.entered, routertest.Patience, "handler entering")
		n, err := locks.Semaphore("http:limit:GET /m", 2).Available(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, n, "permits left while one request runs")
		g.open()
		assert.Equal(t, http.StatusOK, testsupport.Recv(t, got, routertest.Patience, "reply").Status)
	})
}

// watchdogTTL is the Retry-After range of watchdog permits taken within
// elapsed of the answer: their remaining TTL, at most the watchdog timeout.
func watchdogTTL(elapsed time.Duration) (lo, hi int) {
	return int(math.Ceil((lockmw.DefaultWatchdogTimeout - elapsed).Seconds())), int(lockmw.DefaultWatchdogTimeout / time.Second)
}

// WithPermits on a quorum lockmw.Client (three masters, go-redis default
// options): two requests run at once, a third without a wait is answered
// busy (409, with the earliest permit's Retry-After) and never runs, and the
// permits come back.
func TestLimitOnAQuorum(t *testing.T) {
	t.Parallel()
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		rdbs[i] = redistest.Start(t).NewClient()
	}
	locks := lockmw.NewQuorum(rdbs)
	t.Cleanup(func() { _ = locks.Close() })
	const limit = 2
	g := newGate(limit + 1)
	defer g.open()
	mux := http.NewServeMux()
	mux.Handle("GET /reports", httpmw.New(locks, httpmw.WithPermits(limit), httpmw.WithWait(0)).Wrap(g))
	s := routertest.Serve(t, mux)

	var held []<-chan routertest.Reply
	for range limit {
		held = append(held, routertest.SendAsync(t.Context(), s, "GET", "/reports"))
	}
	testsupport.Eventually(t, routertest.Patience, "two requests inside", func() bool { return g.enteredNow() == limit })
	r := routertest.Send(testsupport.CtxFor(t, routertest.Patience), s, "GET", "/reports") // bounded: were it let in, it would block in the gate
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusConflict, r.Status, r.Body)
	got, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
	assert.True(t, 1 <= got && got <= 30, "Retry-After %d, want the watchdog's TTL", got)
	assert.Equal(t, limit, g.enteredNow(), "the third request ran")

	g.open()
	for _, ch := range held {
		assert.Equal(t, http.StatusOK, testsupport.Recv(t, ch, routertest.Patience, "reply").Status)
	}
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/reports").Status, "after the permits came back")
	assert.EqualValues(t, limit, g.c.max.Load(), "most handlers inside at once")
}
