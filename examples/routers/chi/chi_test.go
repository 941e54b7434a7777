package chi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
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
	goleak.VerifyTestMain(m)
}

// placements are the ways to mount Wrap where chi has routed: each mounts
// m.Wrap, then h, on POST /orders/{id} of r.
var placements = []struct {
	name  string
	mount func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc)
}{
	{"r.With on the route", func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		r.With(m.Wrap).Post("/orders/{id}", h)
	}},
	{"Use in an inline Group", func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		r.Group(func(r chi.Router) {
			r.Use(m.Wrap)
			r.Post("/orders/{id}", h)
		})
	}},
	{"r.With under r.Route", func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		r.Route("/orders", func(r chi.Router) {
			r.With(m.Wrap).Post("/{id}", h)
		})
	}},
	{"Use in an inline Group under r.Route", func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		r.Route("/orders", func(r chi.Router) {
			r.Group(func(r chi.Router) {
				r.Use(m.Wrap)
				r.Post("/{id}", h)
			})
		})
	}},
	{"r.With in a mounted router", func(r chi.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		sub := chi.NewRouter()
		sub.With(m.Wrap).Post("/{id}", h)
		r.Mount("/orders", sub)
	}},
}

// newLogger returns an httpmw logger option writing to the returned buffer.
func newLogger() (httpmw.Option, *testsupport.LogBuffer) {
	buf := new(testsupport.LogBuffer)
	return httpmw.WithLogger(slog.New(slog.NewTextHandler(buf, nil))), buf
}

// quiet returns an httpmw logger option that fails the test, at cleanup, if
// anything was logged: no request was refused as misplaced.
func quiet(t *testing.T) httpmw.Option {
	opt, buf := newLogger()
	t.Cleanup(func() { assert.Empty(t, buf.Lines(), "a request was refused as misplaced") })
	return opt
}

func TestEachPlacementLocksTheRoute(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			t.Run("concurrent requests run one at a time across instances", func(t *testing.T) {
				var g routertest.Gauge
				// Two instances: each its own lockmw Client, Middleware, router
				// and server. The short watchdog timeout makes waiters also
				// retry every 300ms, in case a Client's first waiter misses a
				// hand-off published before its subscription was confirmed.
				var servers []*httptest.Server
				for range 2 {
					locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(900*time.Millisecond))
					r := chi.NewRouter()
					p.mount(r, httpmw.New(locks, quiet(t)), g.Handler().ServeHTTP)
					servers = append(servers, routertest.Serve(t, r))
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
			})

			t.Run("the handler's context holds the route's lock", func(t *testing.T) {
				locks := locktest.NewOn(t, srv)
				r := chi.NewRouter()
				p.mount(r, httpmw.New(locks, quiet(t)), func(w http.ResponseWriter, r *http.Request) {
					held, err := locks.Mutex("http:POST /orders/{id}").IsHeld(r.Context())
					fmt.Fprintf(w, "%v %v %s %s", held, err, chi.URLParam(r, "id"), r.PathValue("id"))
				})
				reply := routertest.Send(t.Context(), routertest.Serve(t, r), "POST", "/orders/7")
				require.NoError(t, reply.Err)
				assert.Equal(t, http.StatusOK, reply.Status)
				assert.Equal(t, "true <nil> 7 7", reply.Body, "held, chi's URL param, the path value")
			})
		})
	}
}

func TestGetAndPostOfOneRouteAreTwoLocks(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), quiet(t))
	b := routertest.NewBarrier(2)
	r := chi.NewRouter()
	r.With(m.Wrap).Get("/orders/{id}", b.ServeHTTP)
	r.With(m.Wrap).Post("/orders/{id}", b.ServeHTTP)
	s := routertest.Serve(t, r)
	get, post := routertest.SendAsync(t.Context(), s, "GET", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/1")
	routertest.AllOK(t, get, post)
}

func TestTwoResourcesRunInParallel(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithPathValues("id"), quiet(t))
	r := chi.NewRouter()
	r.With(m.Wrap).Post("/orders/{id}", routertest.NewBarrier(2).ServeHTTP)
	s := routertest.Serve(t, r)
	r1, r2 := routertest.SendAsync(t.Context(), s, "POST", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/2")
	routertest.AllOK(t, r1, r2)
}

func TestUnmatchedRequestsPassThrough(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			r := chi.NewRouter()
			r.Get("/health", func(http.ResponseWriter, *http.Request) {})
			p.mount(r, httpmw.New(locktest.NewOn(t, srv), quiet(t)), func(http.ResponseWriter, *http.Request) {})
			s := routertest.Serve(t, r)
			for _, tt := range []struct {
				method, path string
				want         int
			}{
				{"GET", "/nowhere", http.StatusNotFound},
				{"GET", "/orders/7", http.StatusMethodNotAllowed},
				{"GET", "/health", http.StatusOK},
			} {
				reply := routertest.Send(t.Context(), s, tt.method, tt.path)
				require.NoError(t, reply.Err)
				assert.Equal(t, tt.want, reply.Status, "%s %s: %s", tt.method, tt.path, reply.Body)
			}
		})
	}
}

func TestBusyEndsTheChain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var after, ran atomic.Bool
	r := chi.NewRouter()
	m := httpmw.New(locktest.NewOn(t, srv), httpmw.WithWait(0), quiet(t))
	marker := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			after.Store(true)
			next.ServeHTTP(w, r)
		})
	}
	r.With(m.Wrap, marker).Post("/orders/{id}", func(http.ResponseWriter, *http.Request) { ran.Store(true) })
	s := routertest.Serve(t, r)

	other := locktest.NewOn(t, srv).Mutex("http:POST /orders/{id}")
	hctx, err := other.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Unlock(hctx)) }()

	reply := routertest.Send(t.Context(), s, "POST", "/orders/7")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusConflict, reply.Status, reply.Body)
	assert.Equal(t, "1", reply.Header.Get("Retry-After"))
	assert.False(t, after.Load(), "the middleware after Wrap ran")
	assert.False(t, ran.Load(), "the handler ran")
}

func TestAPanicReleasesTheLockAndReachesRecoverer(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	m := httpmw.New(locks, httpmw.WithWait(0), quiet(t))
	r.With(m.Wrap).Post("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("panic") {
			panic("boom")
		}
	})
	s := routertest.Serve(t, r)

	reply := routertest.Send(t.Context(), s, "POST", "/orders/7?panic")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusInternalServerError, reply.Status, "Recoverer's answer")
	locked, err := locks.Mutex("http:POST /orders/{id}").IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the lock outlived the panic")
	reply = routertest.Send(t.Context(), s, "POST", "/orders/7")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusOK, reply.Status, "the next request gets the lock at once: %s", reply.Body)
}
