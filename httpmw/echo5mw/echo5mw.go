package echo5mw

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// misplacedWhy is why New refuses a request under e.Pre (logged once).
const misplacedWhy = "echo5mw's middleware runs before echo routes the request (registered with e.Pre), " +
	"so it cannot know the route; register it with e.Use, a group or a route"

// New returns echo v5 middleware that runs the requests of a route one at
// a time (or per resource, or at most [httpmw.WithPermits] at a time)
// across every instance of a service whose middlewares use lockmw Clients
// on the same Redis: echomw.New for echo v5, with the same options, lock
// names ("http:POST /orders/:id", from c.Path()) and answers. Mount it with
// e.Use, on a group (e.Group(prefix, mw), g.Use(mw)) or on a route; under
// e.Pre it refuses what echo would route (see the package documentation).
//
// A request that matched no route goes on unlocked. A request that did not
// get the lock has httpmw's answer written into c.Response() and the
// middleware returns nil, so echo's HTTPErrorHandler does not answer again.
// Otherwise the handler runs with the hold context as
// c.Request().Context(), and its error is returned unchanged, after the
// release.
//
// New panics, with httpmw's one-line message, when c is nil, an option is
// nil or an option's value is invalid.
func New(c *lockmw.Client, opts ...httpmw.Option) echo.MiddlewareFunc {
	m := httpmw.New(c, opts...)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec *echo.Context) error { return serve(m, ec, next) }
	}
}

// serve runs next under the lock of c's route, or unlocked when c matched
// no route.
func serve(m *httpmw.Middleware, c *echo.Context, next echo.HandlerFunc) error {
	switch placementOf(c) {
	case unmatched:
		return next(c)
	case beforeRouting:
		m.RefuseMisplaced(c.Response(), c.Request(), misplacedWhy)
		return nil
	}
	orig := c.Request()
	// A clone, not WithContext: a shallow copy shares the path values, which
	// SetPathValue would change under the caller (a ServeMux wildcard of the
	// same name above echo; Go issue 61410).
	r := orig.Clone(orig.Context())
	r.Pattern = routeMethod(c) + " " + c.Path()
	for _, p := range c.PathValues() {
		r.SetPathValue(p.Name, p.Value)
	}
	var err error
	ran := false
	m.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, held *http.Request) {
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

// routeMethod is the method of c's route as a ServeMux pattern names it:
// the request's, but GET for a HEAD request that echo serves with a GET
// route (its automatic HEAD), as "GET /x" matches HEAD in a ServeMux.
func routeMethod(c *echo.Context) string {
	m := c.Request().Method
	if m == http.MethodHead && c.RouteInfo().Method == http.MethodGet {
		return http.MethodGet
	}
	return m
}
