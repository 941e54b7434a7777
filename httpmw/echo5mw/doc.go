// Package echo5mw is echo v5 middleware that runs the requests of a route
// one at a time, or per resource, across every instance of a service:
// httpmw's lock (wait, busy status with Retry-After, limits, read-write,
// path values, the hold context), keyed by echo's route. It is echomw for
// echo v5 (github.com/labstack/echo/v5, whose handlers take *echo.Context),
// with echomw's options, keys and answers.
//
//	locks := lockmw.New(rdb)
//	e.Use(echo5mw.New(locks))                                  // every route: "http:POST /orders/:id"
//	e.POST("/reports", build, echo5mw.New(locks))              // one route
//	orders := e.Group("/orders")
//	orders.Use(echo5mw.New(locks, httpmw.WithPathValues("id")))
//	orders.POST("/:id", update)                                // per order: "http:POST /orders/:id#id=7"
//
// The module is echo5mw, not echomw/v5: that path would be echomw's own
// next major version (still for echo v4), and the two modules version apart
// as the two echo majors do.
//
// New is a translation onto [httpmw], as echomw's is: it hands httpmw a
// copy of the request whose Pattern is the method and echo's route template
// (c.Path()) and whose path values are echo's parameters (c.PathValues()),
// so every httpmw option (WithKey, WithPathValues, WithPermits,
// WithReadWrite, WithWait...) means what it means there.
//
// # Placement
//
// echo runs e.Use middleware after its router has matched the request, and
// e.Pre middleware before (echo.go, Echo.ServeHTTP). New needs the route,
// so it belongs under e.Use, on a group (e.Group(prefix, mw) or g.Use) or
// on a route. Under e.Use every route takes its own lock, health checks and
// static files too; a group or a route locks only its routes. Register
// middleware.Recover before New, so that a panicking handler's lock is
// released before Recover answers 500. Under e.Pre it finds no route; it
// then routes a copy of the request itself, and when echo would match a
// route it answers 500 with a short body and logs once on httpmw's logger
// ([httpmw.WithLogger], slog.Default() by default), as httpmw's Wrap does
// when misplaced: it never runs a request unlocked in silence. (Requests no
// route matches go on to echo's 404 either way.)
//
// This is what echo.WrapMiddleware(m.Wrap) cannot do under e.Use or on a
// group: there it also sees the requests that matched no route, whose
// pattern is "" (httpmw answers 500, misplaced), the template of the
// path's other methods (405 and OPTIONS: locked) or the group's
// "/orders/*" (httpmw answers 500, taking it for a chi mount).
//
// # Keys
//
// The lock of a request is "http:" + method + " " + c.Path(), the route
// template as registered, with a group's prefix: "http:POST /orders/:id",
// "http:GET /files/*" — the names echomw gives the same routes under echo
// v4, so a service moving from v4 to v5 keeps its locks, and instances of
// both versions exclude each other during the move. [httpmw.WithPathValues]
// appends the values of echo's path parameters (c.Param),
// "http:POST /orders/:id#id=7"; the parameter of a "*" route cannot be
// named there. A HEAD request that echo v5 serves with a GET route (its
// automatic HEAD) locks the GET route's name, as a ServeMux's "GET /path"
// matches HEAD. [httpmw.WithOneLockPerPath] changes nothing: the key always
// names the method. A "/*" route is a route here: httpmw refuses a pattern
// ending in "/*" only when it names no method (chi's mounts).
//
// # Unmatched requests
//
// A request that matched no route goes on unlocked and gets echo's own
// answer, never a 500. echo v5's router tells them apart in
// c.RouteInfo() (router.go, DefaultRouter.Route): a 404 has the route name
// echo.NotFoundRouteName, a 405 and the automatic OPTIONS answer
// echo.MethodNotAllowedRouteName, and a RouteNotFound route — those that
// g.Use registers ("/orders" and "/orders/*", group.go), and the ones
// registered with RouteNotFound — has the method echo.RouteNotFound; their
// handlers run unlocked. Unlike echo v4's, v5's RouteInfo says this itself,
// so New needs no table of routes.
//
// # Refused requests and errors
//
// A request that did not get the lock has httpmw's answer written into
// c.Response() (the busy status, 409 by default, with Retry-After; 503 when
// its context ended or Redis failed; 400 or 413 for a bad body or key) and
// the middleware returns nil: the response is committed, the chain ends,
// and echo's HTTPErrorHandler does not write a second answer (middleware
// such as RequestLogger still sees the status). The answer is httpmw's
// short plain text, not the error handler's format.
//
// A handler's error is returned unchanged. The lock is released when the
// handler returns, so echo's HTTPErrorHandler writes that error's answer
// after the release; a handler that wants its answer written under the
// lock writes it itself (c.JSON...) before it returns. A handler that
// panics releases the lock too, and the panic goes on to middleware.Recover
// (or to net/http).
//
// # Context
//
// The handler runs with the hold context as c.Request().Context(): it is
// cancelled, with cause [lockmw.ErrLockLost], when the lock is lost, and
// when the client goes away. The request is the copy httpmw received, with
// r.Pattern set to the key's pattern and echo's parameters as path values;
// the original request is put back into the echo context when the handler
// returns.
package echo5mw
