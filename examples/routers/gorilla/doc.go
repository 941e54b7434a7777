// Package gorilla shows, in compiled examples and tests against the real
// gorilla/mux router (github.com/gorilla/mux) and a real redis-server, how
// httpmw's Middleware locks gorilla/mux routes.
//
// gorilla/mux sets neither r.Pattern nor path values: it keeps the matched
// route and its variables in the request's context (mux.CurrentRoute,
// mux.Vars). So httpmw's default key, on its own, would find no pattern and
// refuse every request. The examples give it what it needs with
// routePattern, a few lines to copy: on a shallow copy of the request it
// sets r.Pattern to the route's template (its host template, if any, then
// its path template) and a path value for each of mux.Vars, then calls the
// next handler, m.Wrap. Then the default key, httpmw.WithPathValues,
// httpmw.WithOneLockPerPath and httpmw.WithKey all work as on a ServeMux.
//
// # Placement
//
//	router.Use(routePattern, m.Wrap)                              // every route of router
//	api := router.PathPrefix("/api").Subrouter()
//	api.Use(routePattern, m.Wrap)                                 // every route of a subrouter
//	router.Handle("/reports", routePattern(m.Wrap(h))).Methods("POST") // one route
//
// gorilla/mux runs Use middleware only once a route has matched (mux.go,
// Router.Match chains the middlewares onto match.Handler only when
// match.MatchErr is nil), so a request that matches no route (404) or no
// method (405) never reaches them: it passes through unlocked. Misplaced,
// the middleware is refused by httpmw with 500 Internal Server Error and a
// log line (httpmw.WithLogger), never skipped: m.Wrap without routePattern
// (no pattern), Wrap around the whole router (no route yet), or a route
// without a path template (router.Methods("POST") alone, a MatcherFunc:
// routePattern leaves the pattern empty).
//
// # Key
//
// The template carries no method, so httpmw puts the request's in front:
// "http:POST /orders/{id}"; a variable's regular expression is part of the
// template ("http:POST /orders/{id:[0-9]+}"); a route with a Host matcher
// has its host template first ("http:POST {tenant}.example.com/orders").
// Query and header matchers are not in the key: routes that differ only by
// them share a lock. httpmw.WithPathValues("id") appends the variable:
// "http:POST /orders/{id}#id=7".
//
// # Busy and refused requests
//
// A request that does not get its turn is answered by httpmw (the busy
// status with Retry-After, 503, 400, or 500 when misplaced) and goes no
// further: the middlewares after Wrap and the handler do not run.
//
// # Context
//
// The handler runs with the hold context as r.Context(), cancelled with
// cause lockmw.ErrLockLost if the lock is lost; mux.Vars and
// mux.CurrentRoute still work on it. A panic releases the lock and goes on
// to whatever recovers it (gorilla/mux has no recovery of its own; net/http's
// server, or gorilla/handlers.RecoveryHandler around the router).
package gorilla
