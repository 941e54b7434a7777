// Package echomw is echo v4 middleware that runs the requests of a route one
// at a time, or per resource, across every instance of a service: httpmw's
// lock (wait, busy status with Retry-After, limits, groups, path values, the
// hold context), keyed by echo's route.
//
//	locks := lockmw.New(rdb)
//	e.Use(echomw.New(locks))                                   // every route: "http:POST /orders/:id"
//	e.POST("/reports", build, echomw.New(locks))               // one route
//	orders := e.Group("/orders", echomw.New(locks, httpmw.WithPathValues("id")))
//	orders.POST("/:id", update)                                // per order: "http:POST /orders/:id#id=7"
//
// New is a translation onto [httpmw]: it hands httpmw a shallow copy of the
// request whose Pattern is the method and echo's route template and whose
// path values are echo's parameters, so every httpmw option (WithKey,
// WithPathValues, WithPermits, WithWait...) means what it means there.
//
// # Placement
//
// echo runs e.Use middleware after its router has matched the request, and
// e.Pre middleware before (echo.go, Echo.ServeHTTP: Router.Find runs inside
// the pre-middleware chain, before the e.Use chain is built around the
// route's handler). New needs the route, so it belongs under e.Use, on a
// group or on a route. Under e.Use every route takes its own lock, health
// checks and static files too; a group or a route locks only its routes.
// Register middleware.Recover before New, so that a panicking handler's
// lock is released before Recover answers 500. Under e.Pre it finds no route; it then routes the
// request itself, and when echo would match a route it answers 500 with a
// short body and logs once on httpmw's logger ([httpmw.WithLogger],
// slog.Default() by default), as httpmw's Wrap does when misplaced: it never
// runs a request unlocked in silence. (Requests
// no route matches go on to echo's 404 either way.)
//
// # Keys
//
// The lock of a request is "http:" + method + " " + c.Path(), the route
// template as registered, with a group's prefix: "http:POST /orders/:id",
// "http:GET /files/*". [httpmw.WithPathValues] appends the values of echo's
// path parameters (c.Param), "http:POST /orders/:id#id=7"; the parameter of
// a "*" route cannot be named there. The host is not part of the key: routes
// with one template on two e.Host routers share a lock unless
// [httpmw.WithKey] adds it. [httpmw.WithOneLockPerPath] changes nothing:
// the key always names the method. A "/*" route is a route here: httpmw
// refuses a pattern ending in "/*" only when it names no method (chi's
// mounts).
//
// # Unmatched requests
//
// A request that matched no route goes on unlocked and gets echo's own
// answer, never a 500. echo v4's Router.Find (router.go) sets c.Path() for
// most of them: a 405 (and the automatic OPTIONS answer) has the template of
// the path's other methods, and a 404 under a group with middleware matches
// the RouteNotFound routes that Group.Use registers ("/orders" and
// "/orders/*", group.go), so c.Path() is "/orders/*". New tells them from
// routes by the context (echo's Allow key, echo.NotFoundHandler) and by the
// router's table of routes (Router.Routes, a RouteNotFound entry without an
// entry for the request's method); handlers registered with RouteNotFound
// run unlocked. A route added with Router.Add, which bypasses that table,
// is locked.
//
// # Refused requests and errors
//
// A request that did not get the lock has httpmw's answer written into
// c.Response() (the busy status, 409 by default, with Retry-After; 503 when
// its context ended or Redis failed; 400 or 413 for a bad body or key) and
// the middleware returns nil: the response is committed, the chain ends, and
// echo's HTTPErrorHandler does not write a second answer (middleware such
// as RequestLogger still sees the status). The answer is httpmw's short
// plain text, not the error handler's format.
//
// A handler's error is returned unchanged. The lock is released when the
// handler returns, so echo's HTTPErrorHandler writes that error's answer
// after the release; a handler that wants its answer written under the lock
// writes it itself (c.JSON...) before it returns. A handler that panics
// releases the lock too, and the panic goes on to middleware.Recover (or to
// net/http).
//
// # Context
//
// The handler runs with the hold context as c.Request().Context(): it is
// cancelled, with cause [lockmw.ErrLockLost], when the lock is lost, and
// when the client goes away. The request is the copy httpmw received, with
// r.Pattern set to the key's pattern and echo's parameters as path values;
// the original request is put back into the echo context when the handler
// returns.
//
// # echo v5
//
// echo v5 has a module of its own, [echo5mw], with this package's options,
// keys and answers: the same route locks "http:POST /orders/:id" under
// both, so v4 and v5 instances of a service exclude each other.
//
// [echo5mw]: https://pkg.go.dev/github.com/go-rlock/rlock/httpmw/echo5mw
package echomw
