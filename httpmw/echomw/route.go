package echomw

import (
	"reflect"
	"sync"

	"github.com/labstack/echo/v4"
)

// placement is where a request meets the middleware.
type placement int

const (
	// routed: the router matched a route of the request's method.
	routed placement = iota
	// unmatched: a 404, a 405, the automatic answer to OPTIONS or a
	// RouteNotFound route.
	unmatched
	// beforeRouting: the middleware runs under e.Pre and the router will
	// match a route.
	beforeRouting
)

// routeTable tells routed requests from unmatched ones. echo v4's
// Router.Find leaves c.Path() non-empty for most requests it matched no
// route for: the 405 answer and the automatic OPTIONS answer have the
// template of the path's other methods, and a RouteNotFound route (which
// every group with middleware registers, as "<prefix>" and "<prefix>/*")
// has its own path. The first two are told by the context (the Allow key,
// echo.NotFoundHandler); a RouteNotFound match only by the router's table
// of routes, whose hits are cached.
type routeTable struct {
	known sync.Map // routeKey → struct{}: registered routes seen
}

type routeKey struct {
	router       *echo.Router
	method, path string
}

// placement classifies c.
func (t *routeTable) placement(c echo.Context) placement {
	if c.Path() != "" {
		if t.matched(c) {
			return routed
		}
		return unmatched
	}
	// Nothing matched, or the router has not run yet (e.Pre): route the
	// request on a context of our own to tell.
	if t.wouldRoute(c) {
		return beforeRouting
	}
	return unmatched
}

// matched reports whether c, which has a path, holds a route of the
// request's method. When in doubt (a route that echo's Router.Add
// registered without a table entry) it says yes: a request is never run
// unlocked on a guess.
func (t *routeTable) matched(c echo.Context) bool {
	h := c.Handler()
	if c.Get(echo.ContextKeyHeaderAllow) != nil || // 405 and the automatic OPTIONS answer
		sameFunc(h, echo.NotFoundHandler) || sameFunc(h, echo.MethodNotAllowedHandler) {
		return false
	}
	r := c.Request()
	k := routeKey{routerFor(c.Echo(), r.Host), r.Method, c.Path()}
	if _, ok := t.known.Load(k); ok {
		return true
	}
	registered, notFound := false, false
	for _, route := range k.router.Routes() {
		if route.Path != k.path {
			continue
		}
		switch route.Method {
		case k.method:
			registered = true
		case echo.RouteNotFound:
			notFound = true
		}
	}
	if registered {
		// Routes are never removed from echo v4's router, so this stays
		// true; only registered routes are stored, which bounds the cache.
		t.known.Store(k, struct{}{})
	}
	return registered || !notFound
}

// wouldRoute reports whether echo's router matches a route for c's request:
// c has no path, so either nothing matched or the router has not run yet.
func (t *routeTable) wouldRoute(c echo.Context) bool {
	e := c.Echo()
	scratch := e.AcquireContext()
	defer e.ReleaseContext(scratch)
	r := c.Request()
	scratch.Reset(r, nil)
	defer scratch.Reset(nil, nil) // keep no request in the pool
	routerFor(e, r.Host).Find(r.Method, echo.GetPath(r), scratch)
	return scratch.Path() != "" && t.matched(scratch)
}

// routerFor is the router echo's ServeHTTP routes a request for host with.
func routerFor(e *echo.Echo, host string) *echo.Router {
	if r, ok := e.Routers()[host]; ok {
		return r
	}
	return e.Router()
}

// sameFunc reports whether a and b are the same function (not closure).
func sameFunc(a echo.HandlerFunc, b func(echo.Context) error) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}
