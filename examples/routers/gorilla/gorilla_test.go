package gorilla_test

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

	"github.com/gorilla/mux"
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

// placements are the ways to lock gorilla/mux routes: each mounts
// routePattern, m.Wrap, then h, on POST prefix + "/orders/{id}" of router.
var placements = []struct {
	name   string
	prefix string
	mount  func(router *mux.Router, m *httpmw.Middleware, h http.HandlerFunc)
}{
	{"router.Use", "", func(router *mux.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		router.Use(routePattern, m.Wrap)
		router.HandleFunc("/orders/{id}", h).Methods("POST")
	}},
	{"Use on a subrouter", "/api", func(router *mux.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		api := router.PathPrefix("/api").Subrouter()
		api.Use(routePattern, m.Wrap)
		api.HandleFunc("/orders/{id}", h).Methods("POST")
	}},
	{"one route's handler", "", func(router *mux.Router, m *httpmw.Middleware, h http.HandlerFunc) {
		router.Handle("/orders/{id}", routePattern(m.Wrap(h))).Methods("POST")
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
					router := mux.NewRouter()
					p.mount(router, httpmw.New(locks, quiet(t)), g.Handler().ServeHTTP)
					servers = append(servers, routertest.Serve(t, router))
				}
				const n = 16
				replies := make(chan routertest.Reply, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						// Different ids: the lock is per route, not per resource.
						replies <- routertest.Send(t.Context(), servers[i%2], "POST", p.prefix+"/orders/"+strconv.Itoa(i))
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
				router := mux.NewRouter()
				p.mount(router, httpmw.New(locks, quiet(t)), func(w http.ResponseWriter, r *http.Request) {
					held, err := locks.Mutex("http:POST " + p.prefix + "/orders/{id}").IsHeld(r.Context())
					fmt.Fprintf(w, "%v %v %s %s", held, err, mux.Vars(r)["id"], r.PathValue("id"))
				})
				reply := routertest.Send(t.Context(), routertest.Serve(t, router), "POST", p.prefix+"/orders/7")
				require.NoError(t, reply.Err)
				assert.Equal(t, http.StatusOK, reply.Status)
				assert.Equal(t, "true <nil> 7 7", reply.Body, "held, mux.Vars, the path value")
			})
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	tests := []struct {
		name    string
		opts    []httpmw.Option
		route   func(router *mux.Router, h http.Handler)
		host    string
		method  string
		path    string
		wantKey string
	}{
		{"a route without Methods locks per request method", nil,
			func(router *mux.Router, h http.Handler) { router.Handle("/orders/{id}", h) },
			"", "PUT", "/orders/7", "http:PUT /orders/{id}"},
		{"a made-up method counts as _OTHER", nil,
			func(router *mux.Router, h http.Handler) { router.Handle("/orders/{id}", h) },
			"", "BREW", "/orders/7", "http:_OTHER /orders/{id}"},
		{"a variable's regular expression is part of the template", []httpmw.Option{httpmw.WithPathValues("id")},
			func(router *mux.Router, h http.Handler) { router.Handle("/orders/{id:[0-9]+}", h).Methods("POST") },
			"", "POST", "/orders/7", "http:POST /orders/{id:[0-9]+}#id=7"},
		{"a Host matcher's template comes first", []httpmw.Option{httpmw.WithPathValues("tenant", "id")},
			func(router *mux.Router, h http.Handler) {
				router.Host("{tenant}.example.com").Path("/orders/{id}").Methods("POST").Handler(h)
			},
			"acme.example.com", "POST", "/orders/7", "http:POST {tenant}.example.com/orders/{id}#tenant=acme&id=7"},
		{"a PathPrefix route locks its prefix", nil,
			func(router *mux.Router, h http.Handler) { router.PathPrefix("/files/").Handler(h) },
			"", "GET", "/files/a/b", "http:GET /files/"},
		{"WithOneLockPerPath leaves the method out", []httpmw.Option{httpmw.WithOneLockPerPath()},
			func(router *mux.Router, h http.Handler) { router.Handle("/orders/{id}", h) },
			"", "PUT", "/orders/7", "http:/orders/{id}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := httpmw.New(locks, append(tt.opts, quiet(t))...)
			router := mux.NewRouter()
			router.Use(routePattern, m.Wrap)
			tt.route(router, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				held, err := locks.Mutex(m.Key(r)).IsHeld(r.Context())
				fmt.Fprintf(w, "%s %v %v", m.Key(r), held, err)
			}))
			s := routertest.Serve(t, router)
			req, err := http.NewRequestWithContext(t.Context(), tt.method, s.URL+tt.path, nil)
			require.NoError(t, err)
			req.Host = tt.host
			reply := routertest.Do(s.Client(), req)
			require.NoError(t, reply.Err)
			assert.Equal(t, http.StatusOK, reply.Status, reply.Body)
			assert.Equal(t, tt.wantKey+" true <nil>", reply.Body, "the key, held by the handler's context")
		})
	}
}

// Behind a ServeMux subtree, r.Pattern arrives as the ServeMux's ("/api/"):
// routePattern replaces it with the gorilla route's template, so each route
// keeps a lock of its own.
func TestBehindAServeMuxTheRouteTemplateWins(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	m := httpmw.New(locks, quiet(t))
	router := mux.NewRouter()
	router.Use(routePattern, m.Wrap)
	router.HandleFunc("/api/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		held, err := locks.Mutex("http:POST /api/orders/{id}").IsHeld(r.Context())
		fmt.Fprintf(w, "%v %v", held, err)
	}).Methods("POST")
	sm := http.NewServeMux()
	sm.Handle("/api/", router)
	reply := routertest.Send(t.Context(), routertest.Serve(t, sm), "POST", "/api/orders/7")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusOK, reply.Status)
	assert.Equal(t, "true <nil>", reply.Body)
}

func TestGetAndPostOfOneRouteAreTwoLocks(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), quiet(t))
	router := mux.NewRouter()
	router.Use(routePattern, m.Wrap)
	router.Handle("/orders/{id}", routertest.NewBarrier(2)).Methods("GET", "POST")
	s := routertest.Serve(t, router)
	get, post := routertest.SendAsync(t.Context(), s, "GET", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/1")
	routertest.AllOK(t, get, post)
}

func TestTwoResourcesRunInParallel(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithPathValues("id"), quiet(t))
	router := mux.NewRouter()
	router.Use(routePattern, m.Wrap)
	router.Handle("/orders/{id}", routertest.NewBarrier(2)).Methods("POST")
	s := routertest.Serve(t, router)
	r1, r2 := routertest.SendAsync(t.Context(), s, "POST", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/2")
	routertest.AllOK(t, r1, r2)
}

func TestUnmatchedRequestsPassThrough(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			router := mux.NewRouter()
			router.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
			p.mount(router, httpmw.New(locktest.NewOn(t, srv), quiet(t)), func(http.ResponseWriter, *http.Request) {})
			s := routertest.Serve(t, router)
			for _, tt := range []struct {
				method, path string
				want         int
			}{
				{"GET", "/nowhere", http.StatusNotFound},
				{"POST", p.prefix + "/nowhere", http.StatusNotFound},
				{"GET", p.prefix + "/orders/7", http.StatusMethodNotAllowed},
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
	marker := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			after.Store(true)
			next.ServeHTTP(w, r)
		})
	}
	router := mux.NewRouter()
	router.Use(routePattern, httpmw.New(locktest.NewOn(t, srv), httpmw.WithWait(0), quiet(t)).Wrap, marker)
	router.HandleFunc("/orders/{id}", func(http.ResponseWriter, *http.Request) { ran.Store(true) }).Methods("POST")
	s := routertest.Serve(t, router)

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

func TestAPanicReleasesTheLockAndGoesOn(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	router := mux.NewRouter()
	router.Use(routePattern, httpmw.New(locks, httpmw.WithWait(0), quiet(t)).Wrap)
	router.HandleFunc("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("panic") {
			panic("boom")
		}
	}).Methods("POST")
	// gorilla/mux has no recovery: the panic goes on to whatever is around
	// the router.
	var recovered atomic.Value
	s := routertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				recovered.Store(v)
				http.Error(w, "recovered", http.StatusInternalServerError)
			}
		}()
		router.ServeHTTP(w, r)
	}))

	reply := routertest.Send(t.Context(), s, "POST", "/orders/7?panic")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusInternalServerError, reply.Status)
	assert.Equal(t, "boom", recovered.Load())
	locked, err := locks.Mutex("http:POST /orders/{id}").IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the lock outlived the panic")
	reply = routertest.Send(t.Context(), s, "POST", "/orders/7")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusOK, reply.Status, "the next request gets the lock at once: %s", reply.Body)
}
