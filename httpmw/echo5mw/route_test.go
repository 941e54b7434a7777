package echo5mw_test

import (
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/echo5mw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// keySpy is a key function that records the patterns of the requests that
// reached httpmw, the only way to a lock.
type keySpy struct {
	mu       sync.Mutex
	patterns []string
}

func (s *keySpy) option() httpmw.Option {
	return httpmw.WithKey(func(r *http.Request) string {
		s.mu.Lock()
		s.patterns = append(s.patterns, r.Pattern)
		s.mu.Unlock()
		return httpmw.PatternKey(r)
	})
}

// take returns the patterns recorded since the last call.
func (s *keySpy) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.patterns
	s.patterns = nil
	return p
}

func ok(c *echo.Context) error { return c.String(http.StatusOK, "ok") }

func pass(next echo.HandlerFunc) echo.HandlerFunc { return next }

// Requests that matched no route go on to echo's answer without a lock;
// echo v5's router says so in c.RouteInfo() (router.go, Route).
func TestUnmatchedRequestsPassThroughUnlocked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	type request struct {
		method, path string
		status       int
		body         string // a part of it
	}
	tests := []struct {
		name     string
		mount    func(e *echo.Echo, mw echo.MiddlewareFunc)
		matched  request
		pattern  string // of the matched request
		requests []request
	}{
		{
			name: "globally with e.Use",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				e.Use(mw)
				e.POST("/orders/:id", ok)
				e.Group("/admin", pass).GET("/x", ok) // registers the RouteNotFound routes /admin and /admin/*
				e.RouteNotFound("/docs/*", func(c *echo.Context) error { return c.String(http.StatusNotFound, "no such doc") })
			},
			matched: request{"POST", "/orders/7", 200, "ok"},
			pattern: "POST /orders/:id",
			requests: []request{
				{"GET", "/nothing", 404, "Not Found"},                // echo.NotFoundRouteName
				{"DELETE", "/orders/7", 405, "Method Not Allowed"},   // echo.MethodNotAllowedRouteName
				{"OPTIONS", "/orders/7", 204, ""},                    // the same, echo's automatic answer
				{"GET", "/admin/none", 404, "Not Found"},             // the group's RouteNotFound "/admin/*"
				{"GET", "/docs/none", 404, "no such doc"},            // a RouteNotFound handler
				{"PROPFIND", "/orders/7", 405, "Method Not Allowed"}, // a method echo knows
				{"BREW", "/orders/7", 405, "Method Not Allowed"},     // and one it does not
			},
		},
		{
			name: "per group",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				e.Group("/orders", mw).POST("/:id", ok)
			},
			matched: request{"POST", "/orders/7", 200, "ok"},
			pattern: "POST /orders/:id",
			requests: []request{
				{"GET", "/orders", 404, "Not Found"},     // the group's RouteNotFound "/orders"
				{"GET", "/orders/7/x", 404, "Not Found"}, // and "/orders/*"
				// The group's catch-all wins over the 405 the route's node
				// would give: echo answers 404.
				{"DELETE", "/orders/7", 404, "Not Found"},
			},
		},
		{
			name: "with g.Use",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				g := e.Group("/orders")
				g.Use(mw)
				g.POST("/:id", ok)
			},
			matched: request{"POST", "/orders/7", 200, "ok"},
			pattern: "POST /orders/:id",
			requests: []request{
				{"GET", "/orders", 404, "Not Found"},
				{"GET", "/orders/7/x", 404, "Not Found"},
			},
		},
		{
			name: "on a RouteNotFound route",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				e.GET("/orders/:id", ok, mw)
				e.RouteNotFound("/*", func(c *echo.Context) error { return c.String(http.StatusNotFound, "nothing here") }, mw)
			},
			matched: request{"GET", "/orders/7", 200, "ok"},
			pattern: "GET /orders/:id",
			requests: []request{
				{"GET", "/nothing", 404, "nothing here"},
			},
		},
	}
	for _, tt := range tests {
		t.Run("registered "+tt.name, func(t *testing.T) {
			var spy keySpy
			e := newEcho()
			tt.mount(e, echo5mw.New(locks, spy.option()))
			s := routertest.Serve(t, e)
			for _, rq := range tt.requests {
				r := routertest.Send(t.Context(), s, rq.method, rq.path)
				require.NoError(t, r.Err)
				assert.Equal(t, rq.status, r.Status, "%s %s: %s", rq.method, rq.path, r.Body)
				assert.Contains(t, r.Body, rq.body, "%s %s", rq.method, rq.path)
				assert.Empty(t, spy.take(), "%s %s reached the lock", rq.method, rq.path)
			}
			r := routertest.Send(t.Context(), s, tt.matched.method, tt.matched.path)
			require.NoError(t, r.Err)
			assert.Equal(t, tt.matched.status, r.Status, r.Body)
			assert.Equal(t, []string{tt.pattern}, spy.take(), "a matched route takes its lock")
		})
	}
}

// A HEAD request that echo serves with a GET route (RouterConfig's
// AutoHandleHEAD) takes the GET route's lock, as a ServeMux's "GET /x"
// pattern does for HEAD.
func TestAutomaticHeadTakesTheGetRoutesLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	var spy keySpy
	e := echo.NewWithConfig(echo.Config{
		Logger: slog.New(slog.DiscardHandler),
		Router: echo.NewRouter(echo.RouterConfig{AutoHandleHEAD: true}),
	})
	e.Use(echo5mw.New(locks, spy.option(), httpmw.WithWait(0)))
	e.GET("/report", ok)
	s := routertest.Serve(t, e)
	release := locktest.Hold(t, locktest.NewOn(t, srv), "http:GET /report", 0)
	assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "HEAD", "/report").Status)
	assert.Equal(t, []string{"GET /report"}, spy.take())
	release()
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "HEAD", "/report").Status)
}

// Under e.Pre the router has not run: New refuses loudly what echo will
// route, and lets echo answer what it will not.
func TestUnderPreRoutedRequestsAreRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	var logged testsupport.LogBuffer
	var spy keySpy
	ran := make(chan struct{}, 2)
	e := newEcho()
	e.Pre(echo5mw.New(locks, spy.option(), httpmw.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))))
	e.POST("/orders/:id", func(c *echo.Context) error { ran <- struct{}{}; return ok(c) })
	s := routertest.Serve(t, e)

	for range 2 {
		r := routertest.Send(t.Context(), s, "POST", "/orders/7")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusInternalServerError, r.Status)
		assert.Contains(t, r.Body, "server misconfigured")
	}
	assert.Empty(t, ran, "the handler ran")
	assert.Equal(t, 1, logged.Count("registered with e.Pre"), "logged once per middleware")
	assert.Equal(t, 1, logged.Count("level=ERROR"), "logged once per middleware")
	assert.Equal(t, 1, logged.Count("register it with e.Use, a group or a route"))

	for _, rq := range []struct {
		method, path string
		status       int
	}{{"GET", "/nothing", 404}, {"DELETE", "/orders/7", 405}} {
		assert.Equal(t, rq.status, routertest.Send(t.Context(), s, rq.method, rq.path).Status, "%s %s", rq.method, rq.path)
	}
	assert.Empty(t, spy.take(), "a request reached the lock")
}

// What the module is for: echo.WrapMiddleware(m.Wrap) under e.Use answers
// 500 for a path no route matches (its pattern is ""), where New lets
// echo answer 404.
func TestWrapMiddlewareGloballyRefusesWhatNewLetsThrough(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	quiet := httpmw.WithLogger(slog.New(slog.DiscardHandler))
	wrapped, mounted := newEcho(), newEcho()
	wrapped.Use(echo.WrapMiddleware(httpmw.New(locks, quiet).Wrap))
	mounted.Use(echo5mw.New(locks, quiet))
	for _, e := range []*echo.Echo{wrapped, mounted} {
		e.POST("/orders/:id", ok)
	}
	assert.Equal(t, http.StatusInternalServerError, routertest.Send(t.Context(), routertest.Serve(t, wrapped), "GET", "/nothing").Status)
	assert.Equal(t, http.StatusNotFound, routertest.Send(t.Context(), routertest.Serve(t, mounted), "GET", "/nothing").Status)
}
