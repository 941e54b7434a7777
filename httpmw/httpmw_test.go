package httpmw_test

import (
	"context"
	"errors"
	"io"
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
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) {
	// go-redis retries a failed dial in a goroutine that sleeps a second
	// before it sees its pool closed: not ours, and it ends by itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

func TestSerializesARouteAcrossInstances(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var g routertest.Gauge
	work := g.Handler()
	// Two instances: each its own lockmw Client, Middleware, mux and server.
	// The short watchdog timeout makes waiters also retry every second: a
	// Client's first waiters can miss a hand-off published before its
	// subscription was confirmed (a lockmw race at the time of writing) and
	// would otherwise wait a full 10s retry period. It is 3s, not less: a
	// holder stalled past the timeout on a loaded machine loses its lock,
	// and the next handler then rightly overlaps it (seen with 900ms under a
	// load average of 9 on 2 cores).
	var servers []*httptest.Server
	for range 2 {
		mux := http.NewServeMux()
		locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(3*time.Second))
		mux.Handle("POST /orders/{id}", httpmw.New(locks).Wrap(work))
		servers = append(servers, routertest.Serve(t, mux))
	}

	const n = 16
	replies := make(chan routertest.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Different ids: the lock is per route, not per resource.
			replies <- routertest.Send(t.Context(), servers[i%2], "POST", "/orders/"+strconv.Itoa(i))
		})
	}
	wg.Wait()
	close(replies)
	for r := range replies {
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}
	peak, all := g.Peak()
	assert.Equal(t, n, all)
	assert.Equal(t, 1, peak, "handlers of one route ran concurrently")
}

func TestDifferentRoutesRunInParallel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m := httpmw.New(locktest.NewOn(t, srv))
	b := routertest.NewBarrier(2)
	mux := http.NewServeMux()
	mux.Handle("POST /a", m.Wrap(b))
	mux.Handle("POST /b", m.Wrap(b))
	s := routertest.Serve(t, mux)
	ra, rb := routertest.SendAsync(t.Context(), s, "POST", "/a"), routertest.SendAsync(t.Context(), s, "POST", "/b")
	routertest.AllOK(t, ra, rb)
}

func TestPerResource(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	m := httpmw.New(locks, httpmw.WithPathValues("id"))

	t.Run("different resources run in parallel", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("POST /orders/{id}", m.Wrap(routertest.NewBarrier(2)))
		s := routertest.Serve(t, mux)
		r1, r2 := routertest.SendAsync(t.Context(), s, "POST", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/2")
		routertest.AllOK(t, r1, r2)
	})

	t.Run("the same resource waits its turn", func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		log := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
		entered, release := make(chan struct{}, 2), make(chan struct{})
		finish := sync.OnceFunc(func() { close(release) })
		defer finish() // also when the test fails: the server waits for its handlers
		mux := http.NewServeMux()
		mux.Handle("POST /orders/{id}", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log("enter " + r.URL.Query().Get("n"))
			entered <- struct{}{}
			<-release
			log("exit " + r.URL.Query().Get("n"))
		})))
		s := routertest.Serve(t, mux)
		first := routertest.SendAsync(t.Context(), s, "POST", "/orders/1?n=1")
		testsupport.Recv(t, entered, routertest.Patience, "first request entering")
		second := routertest.SendAsync(t.Context(), s, "POST", "/orders/1?n=2")
		testsupport.Eventually(t, routertest.Patience, "second request queued", func() bool {
			return locktest.Queued(t, locks.Redis(), "http:POST /orders/{id}#id=1") == 1
		})
		select {
		case <-entered:
			t.Fatal("the second request entered while the first held the resource")
		default:
		}
		finish()
		routertest.AllOK(t, first, second)
		assert.Equal(t, []string{"enter 1", "exit 1", "enter 2", "exit 2"}, events)
	})

	t.Run("a busy resource does not block another", func(t *testing.T) {
		mux := http.NewServeMux()
		busyNow := httpmw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0))
		mux.Handle("POST /orders/{id}", busyNow.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		s := routertest.Serve(t, mux)
		locktest.Hold(t, locktest.NewOn(t, srv), "http:POST /orders/{id}#id=1", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "POST", "/orders/1").Status)
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/2").Status)
	})
}

func TestBusy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	tests := []struct {
		name       string
		opts       []httpmw.Option
		holdLease  time.Duration // of the other holder; 0: watchdog
		wantStatus int
		wantRetry  []string      // any of
		minWait    time.Duration // the request waits at least this long
	}{
		{"WithWait(0) rejects at once with the defaults", []httpmw.Option{httpmw.WithWait(0)}, 0, 409, []string{"1"}, 0},
		{"the status and the hint are configurable", []httpmw.Option{httpmw.WithWait(0), httpmw.WithBusyStatus(429), httpmw.WithRetryAfter(2500 * time.Millisecond)}, 0, 429, []string{"3"}, 0},
		{"a zero hint is sent as 1s", []httpmw.Option{httpmw.WithWait(0), httpmw.WithRetryAfter(0)}, 0, 409, []string{"1"}, 0},
		{"a short wait ends busy", []httpmw.Option{httpmw.WithWait(150 * time.Millisecond), httpmw.WithRetryAfter(2 * time.Second)}, 0, 409, []string{"2"}, 150 * time.Millisecond},
		{"without WithLease a leased holder gives the hint", []httpmw.Option{httpmw.WithWait(0), httpmw.WithRetryAfter(7 * time.Second)}, 5 * time.Second, 409, []string{"7"}, 0},
		{"with WithLease a leased holder gives its remaining lease", []httpmw.Option{httpmw.WithWait(0), httpmw.WithLease(time.Minute)}, 5 * time.Second, 409, []string{"4", "5"}, 0},
		{"with WithLease and a wait the lease is read when rejecting", []httpmw.Option{httpmw.WithWait(100 * time.Millisecond), httpmw.WithLease(time.Minute)}, 5 * time.Second, 409, []string{"4", "5"}, 100 * time.Millisecond},
		{"with WithLease a watchdog holder's TTL is taken for a lease", []httpmw.Option{httpmw.WithWait(0), httpmw.WithLease(time.Minute)}, 0, 409, []string{"29", "30"}, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := "/r" + strconv.Itoa(i)
			var ran atomic.Bool
			mux := http.NewServeMux()
			mux.Handle("GET "+route, httpmw.New(locks, tt.opts...).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) })))
			s := routertest.Serve(t, mux)
			release := locktest.Hold(t, other, "http:GET "+route, tt.holdLease)

			start := time.Now()
			r := routertest.Send(t.Context(), s, "GET", route)
			elapsed := time.Since(start)
			require.NoError(t, r.Err)
			assert.Equal(t, tt.wantStatus, r.Status)
			assert.Contains(t, tt.wantRetry, r.Header.Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
			assert.Contains(t, r.Body, "busy")
			assert.False(t, ran.Load(), "the handler ran without the lock")
			assert.GreaterOrEqual(t, elapsed, tt.minWait, "rejected before the wait ended")

			release()
			r = routertest.Send(t.Context(), s, "GET", route)
			assert.Equal(t, http.StatusOK, r.Status, "after release: %s", r.Body)
			assert.True(t, ran.Load())
		})
	}
}

// A request of this middleware that holds a leased lock tells the next one
// how long it has left.
func TestRetryAfterIsTheHoldersLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m := httpmw.New(locktest.NewOn(t, srv), httpmw.WithLease(3*time.Second), httpmw.WithWait(0))
	entered, release := make(chan struct{}), make(chan struct{})
	finish := sync.OnceFunc(func() { close(release) })
	defer finish() // also when the test fails: the server waits for its handlers
	mux := http.NewServeMux()
	mux.Handle("GET /slow", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			_, ok := r.Context().Deadline()
			assert.True(t, ok, "a leased hold has a deadline")
			close(entered)
			<-release
		}
	})))
	s := routertest.Serve(t, mux)
	first := routertest.SendAsync(t.Context(), s, "GET", "/slow?hold")
	testsupport.Recv(t, entered, routertest.Patience, "holder entering")
	r := routertest.Send(t.Context(), s, "GET", "/slow")
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Contains(t, []string{"2", "3"}, r.Header.Get("Retry-After"))
	finish()
	assert.Equal(t, http.StatusOK, testsupport.Recv(t, first, routertest.Patience, "holder reply").Status)
}

func TestDisconnectWhileWaiting(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	for _, tc := range []struct {
		name, method string
		body         string
	}{
		{"without a body", "GET", ""},
		{"with a body", "POST", `{"qty":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pattern := tc.method + " /wait"
			var ran atomic.Bool
			served := make(chan struct{}, 1)
			wrapped := httpmw.New(locks, httpmw.WithWait(lockmw.Forever)).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) }))
			mux := http.NewServeMux()
			mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { served <- struct{}{} }()
				wrapped.ServeHTTP(w, r)
			}))
			s := routertest.Serve(t, mux)
			release := locktest.Hold(t, locktest.NewOn(t, srv), "http:"+pattern, 0)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan routertest.Reply, 1)
			go func() { got <- routertest.SendBody(ctx, s, tc.method, "/wait", strings.NewReader(tc.body)) }()
			testsupport.Eventually(t, routertest.Patience, "request queued", func() bool { return locktest.Queued(t, locks.Redis(), "http:"+pattern) == 1 })
			cancel()
			assert.ErrorIs(t, testsupport.Recv(t, got, routertest.Patience, "client").Err, context.Canceled)
			testsupport.Recv(t, served, routertest.Patience, "the middleware giving up")
			assert.False(t, ran.Load(), "the handler ran for a client that left")
			// lockmw leaves the queue in the background.
			testsupport.Eventually(t, routertest.Patience, "waiter leaving the queue", func() bool { return locktest.Queued(t, locks.Redis(), "http:"+pattern) == 0 })
			release()
		})
	}
}

func TestTheHandlerGetsTheWholeBody(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body) // all before writing: HTTP/1 may stop reading once the answer starts
		assert.NoError(t, err)
		_, _ = w.Write(b)
	})
	long := strings.Repeat("0123456789", 100)
	for _, tc := range []struct {
		name   string
		opts   []httpmw.Option
		body   func() io.Reader
		expect string
	}{
		{"a small body", nil, func() io.Reader { return strings.NewReader("hello") }, "hello"},
		{"a body longer than the buffer", []httpmw.Option{httpmw.WithBodyBuffer(16)}, func() io.Reader { return strings.NewReader(long) }, long},
		{"a chunked body longer than the buffer", []httpmw.Option{httpmw.WithBodyBuffer(16)}, func() io.Reader { return io.MultiReader(strings.NewReader(long)) }, long},
		{"a chunked body within the buffer", nil, func() io.Reader { return io.MultiReader(strings.NewReader(long)) }, long},
		{"no buffer", []httpmw.Option{httpmw.WithBodyBuffer(0)}, func() io.Reader { return strings.NewReader(long) }, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("POST /echo", httpmw.New(locks, tc.opts...).Wrap(echo))
			s := routertest.Serve(t, mux)
			r := routertest.SendBody(t.Context(), s, "POST", "/echo", tc.body())
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusOK, r.Status)
			assert.Equal(t, tc.expect, r.Body)
		})
	}
}

func TestPanicInTheHandlerReleasesTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	m := httpmw.New(locks, httpmw.WithWait(0))
	mux := http.NewServeMux()
	mux.Handle("GET /boom", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("panic") {
			panic("boom")
		}
	})))
	s := routertest.Serve(t, mux) // its http.Server recovers the panic; the log is discarded
	r := routertest.Send(t.Context(), s, "GET", "/boom?panic")
	require.Error(t, r.Err, "the server closes the connection of a panicking handler")
	locked, err := locks.Mutex("http:GET /boom").IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the lock outlived the panic")
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/boom").Status)
}

func TestTheHandlerRunsWithTheHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	m := httpmw.New(locks, httpmw.WithWait(0))
	const key = "http:GET /held"

	t.Run("r.Context holds the lock and a nested Wrap re-enters", func(t *testing.T) {
		mux := http.NewServeMux()
		inner := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := locks.Mutex(key).HoldCount(r.Context())
			assert.NoError(t, err)
			assert.Equal(t, 2, n)
		}))
		mux.Handle("GET /held", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held, err := locks.Mutex(key).IsHeld(r.Context())
			assert.NoError(t, err)
			assert.True(t, held)
			inner.ServeHTTP(w, r)
		})))
		s := routertest.Serve(t, mux)
		r := routertest.Send(t.Context(), s, "GET", "/held")
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	})

	t.Run("a lost lock cancels r.Context", func(t *testing.T) {
		causes := make(chan error, 1)
		entered := make(chan struct{})
		mux := http.NewServeMux()
		mux.Handle("GET /held", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			select {
			case <-r.Context().Done():
				causes <- context.Cause(r.Context())
			case <-time.After(routertest.Patience):
				causes <- errors.New("r.Context() not cancelled")
			}
		})))
		s := routertest.Serve(t, mux)
		got := routertest.SendAsync(t.Context(), s, "GET", "/held")
		testsupport.Recv(t, entered, routertest.Patience, "handler entering")
		_, err := locks.Mutex(key).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.ErrorIs(t, testsupport.Recv(t, causes, routertest.Patience, "cause"), lockmw.ErrLockLost)
		testsupport.Recv(t, got, routertest.Patience, "reply")
	})
}

func TestWrapMux(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var acquisitions atomic.Int64
	locks := locktest.NewOn(t, srv, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			acquisitions.Add(1)
			return nil
		},
	}))
	var keys sync.Map
	m := httpmw.New(locks, httpmw.WithWait(0), httpmw.WithKey(func(r *http.Request) string {
		keys.Store(r.Pattern, true)
		return httpmw.PatternKey(r)
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		held, err := locks.Mutex("http:POST /orders/{id}").IsHeld(r.Context())
		assert.NoError(t, err)
		assert.True(t, held, "the handler runs without the hold")
		assert.Equal(t, "7", r.PathValue("id"), "the mux still sets path values")
		_, _ = io.WriteString(w, r.Pattern)
	})
	mux.HandleFunc("GET /free", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /dir/", func(w http.ResponseWriter, r *http.Request) {})
	mux.Handle("GET /old", http.RedirectHandler("/free", http.StatusMovedPermanently))
	s := routertest.Serve(t, m.WrapMux(mux))
	noRedirects := *s.Client()
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	t.Run("a matched route locks its pattern", func(t *testing.T) {
		r := routertest.Send(t.Context(), s, "POST", "/orders/7")
		assert.Equal(t, http.StatusOK, r.Status)
		assert.Equal(t, "POST /orders/{id}", r.Body)
		_, ok := keys.Load("POST /orders/{id}")
		assert.True(t, ok, "the key function did not see r.Pattern")

		release := locktest.Hold(t, locktest.NewOn(t, srv), "http:POST /orders/{id}", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "POST", "/orders/8").Status, "every id shares the pattern's lock")
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/free").Status, "another pattern is free")
		release()
	})

	t.Run("unmatched requests and redirects pass through unlocked", func(t *testing.T) {
		before := acquisitions.Load()
		for _, tc := range []struct {
			method, path string
			status       int
		}{
			{"GET", "/nowhere", http.StatusNotFound},
			{"DELETE", "/free", http.StatusMethodNotAllowed},
			{"GET", "/dir", http.StatusTemporaryRedirect},
			{"GET", "/a/../free", http.StatusTemporaryRedirect},
			{"GET", "/old", http.StatusMovedPermanently},
		} {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, s.URL+tc.path, nil)
			require.NoError(t, err)
			req.URL.Opaque = tc.path // keep "/a/../free" as sent
			resp, err := noRedirects.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode, "%s %s", tc.method, tc.path)
		}
		assert.Equal(t, before, acquisitions.Load(), "a request without a route took a lock")
	})

	t.Run("WrapMux refuses path values", func(t *testing.T) {
		assert.PanicsWithValue(t, "httpmw: WrapMux: WithPathValues needs Wrap (mux.Handler sets no path values)", func() {
			httpmw.New(locks, httpmw.WithPathValues("id")).WrapMux(mux)
		})
	})
}

func TestRequestDataNeverPanics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	var ran atomic.Int64
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Add(1) })
	mux := http.NewServeMux()
	mux.Handle("GET /o/{id}", httpmw.New(locks, httpmw.WithPathValues("id")).Wrap(h))
	mux.Handle("GET /bad", httpmw.New(locks, httpmw.WithKey(func(*http.Request) string { return "bad\x00key" })).Wrap(h))
	mux.Handle("GET /none", httpmw.New(locks, httpmw.WithKey(func(*http.Request) string { return "" })).Wrap(h))
	mux.Handle("POST /capped", http.MaxBytesHandler(httpmw.New(locks).Wrap(h), 4))
	s := routertest.Serve(t, mux)

	r := routertest.Send(t.Context(), s, "GET", "/o/"+strings.Repeat("x", lockmw.MaxNameLen))
	assert.Equal(t, http.StatusBadRequest, r.Status, "a key too long for a lock name")
	assert.Contains(t, r.Body, "bad request")
	r = routertest.Send(t.Context(), s, "GET", "/o/%00%0A%FF")
	assert.Equal(t, http.StatusOK, r.Status, "odd bytes in a path value are escaped")
	assert.Equal(t, http.StatusBadRequest, routertest.Send(t.Context(), s, "GET", "/bad").Status)
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/none").Status)
	assert.Equal(t, http.StatusRequestEntityTooLarge, routertest.SendBody(t.Context(), s, "POST", "/capped", strings.NewReader("too long")).Status)
	assert.EqualValues(t, 2, ran.Load())
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran without the lock") })

	t.Run("a request context that ends while waiting gives 503", func(t *testing.T) {
		locks := locktest.NewOn(t, srv)
		locktest.Hold(t, locktest.NewOn(t, srv), "http:GET /deadline", 0)
		mux := http.NewServeMux()
		wrapped := httpmw.New(locks).Wrap(h)
		mux.Handle("GET /deadline", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
			defer cancel()
			wrapped.ServeHTTP(w, r.WithContext(ctx))
		}))
		r := routertest.Send(t.Context(), routertest.Serve(t, mux), "GET", "/deadline")
		assert.Equal(t, http.StatusServiceUnavailable, r.Status)
		assert.Empty(t, r.Header.Get("Retry-After"))
	})

	t.Run("a closed Client gives 503", func(t *testing.T) {
		locks := locktest.NewOn(t, srv)
		mux := http.NewServeMux()
		mux.Handle("GET /closed", httpmw.New(locks).Wrap(h))
		require.NoError(t, locks.Close())
		r := routertest.Send(t.Context(), routertest.Serve(t, mux), "GET", "/closed")
		assert.Equal(t, http.StatusServiceUnavailable, r.Status)
		assert.Equal(t, "lock service unavailable\n", r.Body)
	})

	t.Run("Redis down gives 503", func(t *testing.T) {
		locks := locktest.NewDown(t)
		mux := http.NewServeMux()
		mux.Handle("GET /down", httpmw.New(locks).Wrap(h))
		s := routertest.Serve(t, mux)
		r := routertest.Send(t.Context(), s, "GET", "/down")
		assert.Equal(t, http.StatusServiceUnavailable, r.Status)
		assert.Equal(t, "lock service unavailable\n", r.Body)
	})
}

// The options convention: option constructors never panic; New applies the
// options, then panics on a nil Option or an invalid value with one line
// naming the option and the value. (Until the convention was made one for
// every package, httpmw's invalid options panicked when they were created.)
func TestConfigurationPanics(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{"httpmw: New(nil): a lockmw.Client is required", func() { httpmw.New(nil) }},
		{"httpmw: New: nil Option", func() { httpmw.New(locks, nil) }},
		{"httpmw: Wrap(nil): a handler is required", func() { httpmw.New(locks).Wrap(nil) }},
		{"httpmw: WrapMux(nil): a ServeMux is required", func() { httpmw.New(locks).WrapMux(nil) }},
	} {
		assert.PanicsWithValue(t, tc.want, tc.f)
	}
	for _, tc := range []struct {
		want string
		opt  httpmw.Option
	}{
		{"httpmw: WithKey(nil): a key function is required", httpmw.WithKey(nil)},
		{"httpmw: WithLogger(nil): a logger is required", httpmw.WithLogger(nil)},
		{"httpmw: WithOnSkip(nil): a function is required", httpmw.WithOnSkip(nil)},
		{"httpmw: WithPathValues(): at least one wildcard name is required", httpmw.WithPathValues()},
		{`httpmw: WithPathValues("1d"): not a wildcard name`, httpmw.WithPathValues("id", "1d")},
		{`httpmw: WithPathValues(""): not a wildcard name`, httpmw.WithPathValues("")},
		{"httpmw: WithWait(-1ns): must not be negative", httpmw.WithWait(-1)},
		{"httpmw: WithLease(-1s): must not be negative", httpmw.WithLease(-time.Second)},
		{"httpmw: WithRetryAfter(-1ms): must not be negative", httpmw.WithRetryAfter(-time.Millisecond)},
		{"httpmw: WithBodyBuffer(-1): must not be negative", httpmw.WithBodyBuffer(-1)},
		{"httpmw: WithBusyStatus(399): must be a 4xx or 5xx status", httpmw.WithBusyStatus(399)},
		{"httpmw: WithBusyStatus(600): must be a 4xx or 5xx status", httpmw.WithBusyStatus(600)},
		{"httpmw: WithPermits(0): must be at least 1", httpmw.WithPermits(0)},
		{"httpmw: WithPermits(-2): must be at least 1", httpmw.WithPermits(-2)},
	} {
		assert.PanicsWithValue(t, tc.want, func() { httpmw.New(locks, tc.opt) }, "in New, not when the option is made")
	}
	for _, code := range []int{400, 599} {
		assert.NotPanics(t, func() { httpmw.New(locks, httpmw.WithBusyStatus(code)) })
	}
	assert.NotPanics(t, func() { httpmw.New(locks, httpmw.WithPathValues("_x", "é2")) })
	assert.NotPanics(t, func() { httpmw.New(locks, httpmw.WithPermits(1)) })
	assert.NotPanics(t, func() { httpmw.New(locks, httpmw.WithPermits(0), httpmw.WithPermits(2)) })
	assert.NotPanics(t, func() { httpmw.New(locks, httpmw.WithWait(-1), httpmw.WithWait(0)) }, "the result is checked, not each option")
}
