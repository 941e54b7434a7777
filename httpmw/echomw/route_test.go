package echomw_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/echomw"
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

func ok(c echo.Context) error { return c.String(http.StatusOK, "ok") }

func pass(next echo.HandlerFunc) echo.HandlerFunc { return next }

// sendTo sends a request with the Host header host.
func sendTo(t *testing.T, s *httptest.Server, method, host, path string) routertest.Reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, nil)
	require.NoError(t, err)
	req.Host = host
	r := routertest.Do(s.Client(), req)
	require.NoError(t, r.Err)
	return r
}

// Requests that matched no route go on to echo's answer without a lock,
// although echo v4's router gives most of them a path (router.go, Find).
func TestUnmatchedRequestsPassThroughUnlocked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	type request struct {
		method, host, path string
		status             int
		body               string // a part of it
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
				e.RouteNotFound("/docs/*", func(c echo.Context) error { return c.String(http.StatusNotFound, "no such doc") })
				e.Host("api.test", pass).GET("/x", ok) // a host router with its own RouteNotFound routes
			},
			matched: request{"POST", "", "/orders/7", 200, "ok"},
			pattern: "POST /orders/:id",
			requests: []request{
				{"GET", "", "/nothing", 404, "Not Found"},                // c.Path() ""
				{"DELETE", "", "/orders/7", 405, "Method Not Allowed"},   // c.Path() "/orders/:id"
				{"OPTIONS", "", "/orders/7", 204, ""},                    // c.Path() "/orders/:id", echo's automatic answer
				{"GET", "", "/admin/none", 404, "Not Found"},             // c.Path() "/admin/*"
				{"GET", "", "/docs/none", 404, "no such doc"},            // c.Path() "/docs/*", a RouteNotFound handler
				{"GET", "api.test", "/none", 404, "Not Found"},           // c.Path() "/*" on the host's router
				{"POST", "api.test", "/orders/7", 404, "Not Found"},      // not a route of that host
				{"PROPFIND", "", "/orders/7", 405, "Method Not Allowed"}, // a method echo knows
				{"BREW", "", "/orders/7", 405, "Method Not Allowed"},     // and one it does not
			},
		},
		{
			name: "per group",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				e.Group("/orders", mw).POST("/:id", ok)
			},
			matched: request{"POST", "", "/orders/7", 200, "ok"},
			pattern: "POST /orders/:id",
			requests: []request{
				{"GET", "", "/orders", 404, "Not Found"},     // c.Path() "/orders"
				{"GET", "", "/orders/7/x", 404, "Not Found"}, // c.Path() "/orders/*"
				// The group's catch-all wins over the 405 the route's node
				// would give: echo answers 404.
				{"DELETE", "", "/orders/7", 404, "Not Found"},
			},
		},
		{
			name: "on a RouteNotFound route",
			mount: func(e *echo.Echo, mw echo.MiddlewareFunc) {
				e.GET("/orders/:id", ok, mw)
				e.RouteNotFound("/*", func(c echo.Context) error { return c.String(http.StatusNotFound, "nothing here") }, mw)
			},
			matched: request{"GET", "", "/orders/7", 200, "ok"},
			pattern: "GET /orders/:id",
			requests: []request{
				{"GET", "", "/nothing", 404, "nothing here"},
			},
		},
	}
	for _, tt := range tests {
		t.Run("registered "+tt.name, func(t *testing.T) {
			var spy keySpy
			e := newEcho()
			tt.mount(e, echomw.New(locks, spy.option()))
			s := routertest.Serve(t, e)
			for _, rq := range tt.requests {
				r := sendTo(t, s, rq.method, rq.host, rq.path)
				assert.Equal(t, rq.status, r.Status, "%s %s%s: %s", rq.method, rq.host, rq.path, r.Body)
				assert.Contains(t, r.Body, rq.body, "%s %s%s", rq.method, rq.host, rq.path)
				assert.Empty(t, spy.take(), "%s %s%s reached the lock", rq.method, rq.host, rq.path)
			}
			r := sendTo(t, s, tt.matched.method, tt.matched.host, tt.matched.path)
			assert.Equal(t, tt.matched.status, r.Status, r.Body)
			assert.Equal(t, []string{tt.pattern}, spy.take(), "a matched route takes its lock")
		})
	}
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
	e.Pre(echomw.New(locks, spy.option(), httpmw.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))))
	e.POST("/orders/:id", func(c echo.Context) error { ran <- struct{}{}; return ok(c) })
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
