package echomw

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// misplacedBody is the body of the 500 answer of a middleware registered
// with e.Pre.
const misplacedBody = "server misconfigured: the lock middleware runs before routing"

// misplacedLog is the line logged once per [New] when it finds itself
// registered with e.Pre.
const misplacedLog = "echomw: the middleware runs before echo routes the request (registered with e.Pre): " +
	"it cannot know the route, so it answers 500 to every request that has one; register it with e.Use, a group or a route"

// New returns echo middleware that runs the requests of a route one at a
// time (or per resource, or at most [httpmw.WithLimit] at a time) across
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
	// The key function is named first so that the user's WithKey still
	// wins: with the default httpmw would judge the pattern itself and
	// refuse one ending in "/*" as a chi mount, while echo's "/files/*" is
	// a route. This middleware has judged the placement already (serve).
	opts = append([]httpmw.Option{httpmw.WithKey(httpmw.PatternKey)}, opts...)
	mw := &middleware{m: httpmw.New(c, opts...)}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error { return mw.serve(ec, next) }
	}
}

type middleware struct {
	m         *httpmw.Middleware
	routes    routeTable
	misplaced sync.Once // logs misplacedLog
}

// serve runs next under the lock of c's route, or unlocked when c matched
// no route.
func (mw *middleware) serve(c echo.Context, next echo.HandlerFunc) error {
	switch mw.routes.placement(c) {
	case unmatched:
		return next(c)
	case beforeRouting:
		mw.misplaced.Do(func() { c.Logger().Error(misplacedLog) })
		http.Error(c.Response(), misplacedBody, http.StatusInternalServerError)
		return nil
	}
	orig := c.Request()
	r := orig.WithContext(orig.Context())
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
