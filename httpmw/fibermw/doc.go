// Package fibermw is fiber (v3) middleware that runs requests one at a time
// per route, or per resource, across every instance of a service: [httpmw]'s
// middleware, translated onto fiber's context. The waiting, the answers, the
// limits and the groups of metrics are httpmw's; the options are this
// package's, named as httpmw's.
//
//	app := fiber.New()
//	app.Use(recover.New())                                          // a panic answers 500, the lock is released
//	app.Post("/reports", fibermw.New(locks), buildReport)           // "http:POST /reports"
//	perOrder := fibermw.New(locks, fibermw.WithParams("id"))        // locks is a *lockmw.Client
//	app.Post("/orders/:id", perOrder, updateOrder)                  // "http:POST /orders/:id#id=7"
//
// # Placement: per route, never with Use
//
// Give the handler New returns to each route it protects, before the
// route's handler: app.Post(path, fibermw.New(locks), h), the same on a
// Group's routes (group.Post), a mounted app's routes and a RouteChain's
// methods (app.RouteChain(path).Post(fibermw.New(locks), h)). One handler
// may serve several routes: each route has its own lock.
//
// Every Use in fiber registers a route of its own that matches by prefix
// (router.go, App.register with the method "USE"): app.Use, the handlers
// given to app.Group(prefix, ...), group.Use, and RouteChain(path).All.
// Such a handler runs before fiber has matched the request's route, so it
// cannot know the route, and fiber says so: c.Matched() is false until a
// route that is not a Use has matched (App.next). There the handler refuses
// every request, including those no route would match, with 500 Internal
// Server Error and a short plain-text body; the rest of the chain does not
// run, and the first such request of each handler is logged ([WithLogger])
// with the fix. Running the routes unlocked without a word would be worse.
//
// A Use registered after a route only runs when that route's handler calls
// c.Next(); fiber then still reports the request as matched, and the
// handler locks the Use's own path as if it were a route. Do not register
// it that way.
//
// A request that no route matches never reaches a route's handlers: fiber
// answers 404 or 405 itself, without a lock and never with 500 (unless the
// handler is under Use, see above).
//
// # Keys
//
// The handler hands httpmw a request whose Pattern is the route's method and
// path as registered (c.Route(): with its group's or mount's prefix, its
// parameters and constraints as written), so the default key is
//
//	"http:" + method + " " + path   // "http:POST /orders/:id"
//
// Each method of a path is a lock of its own (app.All registers one route
// per method), and so is the HEAD route fiber adds for each GET route. With
// fiber's default case-insensitive routing, "/ORDERS/7" locks the route as
// registered, "/orders/:id". [WithParams] appends the values of named route
// parameters, through httpmw's [httpmw.WithPathValues]
// ("http:POST /orders/:id#id=7"); [WithKey] names the lock from the
// fiber.Ctx instead, and its "" runs the request unlocked.
//
// # Busy and refused requests
//
// A request that does not get its lock is answered by httpmw on c's
// response: the busy status ([WithBusyStatus], 409 by default) with a
// Retry-After header; 503 when the request's context ended while it waited
// or Redis failed; 400 when the key is not a valid lock name. The handler
// then returns nil without calling c.Next(): the rest of the chain does not
// run, fiber's error handler is not called (the answer is written already),
// and the middleware before it sees a nil error from c.Next() and the
// status in c.Response().StatusCode().
//
// # Context
//
// While the rest of the chain runs, c.Context() is the hold context: it is
// cancelled, with cause [lockmw.ErrLockLost], when the lock is lost, and a
// nested lock of the same Client and name taken with it re-enters. The
// previous c.Context() is put back when the chain returns. A fiber.Ctx is
// itself a context.Context, but not this one: its Done is nil and it has no
// deadline (fiber's ctx.go). Pass c.Context(), not c, where the work should
// stop with the lock.
//
// An error returned by the chain is returned by the handler, and reaches
// fiber's error handler after the lock is released. A panic releases the
// lock and goes on; register fiber's recover middleware, as fasthttp does
// not recover panics. fasthttp sends the response after the handlers
// return, after the release; a body produced by SendStreamWriter or a
// stream given to SendStream is written later still, outside the lock.
//
// # Clients that go away
//
// fasthttp does not tell a handler that its client went away: the server
// never cancels c.Context(). A request waiting for its lock therefore stays
// in the lock's queue until its turn comes or its wait ([WithWait], 10s by
// default, httpmw.DefaultWait) ends; when its turn comes its handler runs, for no one,
// and the requests queued behind it wait for that run too. Keep the wait
// short, and do not wait [lockmw.Forever] (app.Shutdown would wait for such
// a request too). A deadline or a cancellation that an earlier middleware
// puts on c.Context() (c.SetContext with a context.WithTimeout of it) ends
// the wait as well, with 503.
//
// fasthttp reads a request's body before the handlers run, so, unlike
// httpmw, the handler buffers nothing.
//
// # Concurrency
//
// The handler New returns is safe for concurrent use and serves any number
// of routes and requests at once; each request waits on its own. What the
// handler keeps beyond a request (the lock's name) is copied out of fiber's
// reused buffers.
package fibermw
