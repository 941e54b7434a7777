// Package chi shows, in compiled examples and tests against the real chi
// router (github.com/go-chi/chi/v5) and a real redis-server, where
// httpmw's Middleware goes in a chi router. chi needs no adapter: by the
// time a route's own middleware runs, chi has matched the route and set
// r.Pattern (since v5.3.0, to chi.RouteContext(ctx).RoutePattern(), such as
// "/orders/{id}") and the request's path values (r.PathValue("id")).
//
// # Placement
//
// Mount Wrap where chi has routed the request:
//
//	r.With(m.Wrap).Post("/orders/{id}", h)           // one route
//	r.Group(func(r chi.Router) {                     // the routes of an inline group
//		r.Use(m.Wrap)
//		r.Post("/reports", h)
//	})
//
// With and Group make inline routers whose middleware chi chains onto each
// endpoint handler (mux.go, Mux.handle), so it runs after routing; inside
// r.Route or a mounted router use them the same way. chi's top-level
// r.Use runs before routing (r.Pattern is still empty), and Use inside
// r.Route or Mount runs after the parent router matched only the mount
// ("/orders/*"): httpmw refuses both with 500 Internal Server Error, runs
// no handler, and logs the fix once per Middleware (httpmw.WithLogger).
//
// # Key
//
// chi patterns carry no method, so httpmw's default key puts the request's
// method in front: "http:POST /orders/{id}", and GET and POST of one route
// are two locks. httpmw.WithPathValues("id") reads the path values chi set:
// "http:POST /orders/{id}#id=7". Inside r.Route("/orders", ...) the pattern
// is the whole one, "/orders/{id}".
//
// # Busy and refused requests
//
// A request that does not get its turn is answered by httpmw (the busy
// status with Retry-After, 503, 400, or 500 when misplaced) and goes no
// further: the middleware after Wrap and the handler do not run. A request
// that matches no route (404, 405) never reaches a route's middleware: it
// passes through unlocked.
//
// # Context
//
// The handler runs with the hold context as r.Context(): cancelled, with
// cause lockmw.ErrLockLost, if the lock is lost; a nested lock of the same
// name on the same Client re-enters. chi's route context
// (chi.RouteContext, chi.URLParam) is still in it. A panic releases the
// lock and goes on to chi's middleware.Recoverer.
package chi
