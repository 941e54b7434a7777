package echomw

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// misplacedWhy is why New refuses a request under e.Pre (logged once).
const misplacedWhy = "echomw's middleware runs before echo routes the request (registered with e.Pre), " +
	"so it cannot know the route; register it with e.Use, a group or a route"

// New returns echo middleware that runs the requests of a route one at a
// time (or per resource, or at most [httpmw.WithPermits] at a time) across
// every instance of a service whose middlewares use lockmw Clients on the
// same Redis. It works where echo has routed the request: globally
// (e.Use), per group (e.Group("/orders", mw)) and per route
// (e.POST("/orders/:id", h, mw)); see the package documentation for
// e.Pre.
//
// The options are httpmw's, with their defaults and meaning (wait, busy
// status, Retry-After, lease, limit, body buffer, key); the lock of a
// request is named "http:" + method + " " + c.Path(), echo's route
// template, such as "http:POST /orders/:id", and [httpmw.WithPathValues]
// reads echo's path parameters (c.Param), as in
// "http:POST /orders/:id#id=7".
//
// A request that matched no route (404, 405, the automatic answer to
// OPTIONS, a RouteNotFound route) goes on unlocked. A request that did not
// get the lock has httpmw's answer written into c.Response() (the busy
// status with Retry-After, 503, 400 or 413) and the middleware returns nil:
// the chain ends there and echo's HTTPErrorHandler does not write a second
// answer. Otherwise the handler runs with the hold context as
// c.Request().Context(), and the middleware returns its error unchanged;
// the lock is released when the handler returns (or panics: the panic goes
// on, to middleware.Recover for example), before echo's HTTPErrorHandler
// answers that error.
//
// New panics, with httpmw's one-line message, when c is nil, an option is
// nil or an option's value is invalid.
func New(c *lockmw.Client, opts ...httpmw.Option) echo.MiddlewareFunc {
	mw := &middleware{m: httpmw.New(c, opts...)}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error { return mw.serve(ec, next) }
	}
}

type middleware struct {
	m      *httpmw.Middleware
	routes routeTable
}

// serve runs next under the lock of c's route, or unlocked when c matched
// no route.
func (mw *middleware) serve(c echo.Context, next echo.HandlerFunc) error {
	switch mw.routes.placement(c) {
	case unmatched:
		return next(c)
	case beforeRouting:
		mw.m.RefuseMisplaced(c.Response(), c.Request(), misplacedWhy)
		return nil
	}
	orig := c.Request()
	// A clone, not WithContext: a shallow copy shares the path values, which
	// SetPathValue would change under the caller (a ServeMux wildcard of the
	// same name above echo; Go issue 61410).
	r := orig.Clone(orig.Context())
	r.Pattern = orig.Method + " " + c.Path()
	values := c.ParamValues()
	for i, name := range c.ParamNames() {
		r.SetPathValue(name, values[i])
	}
	var err error
	ran := false
	mw.m.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, held *http.Request) {
		ran = true
		c.SetRequest(held) // its context is the hold context
		defer c.SetRequest(orig)
		err = next(c)
	})).ServeHTTP(c.Response(), r)
	if !ran {
		return nil // httpmw has answered
	}
	return err
}
