// Package ginmw is gin middleware that runs requests one at a time per
// route, or per resource, across every instance of a service: [httpmw]'s
// middleware, translated onto gin's context. The options are httpmw's, and
// so are the waiting, the answers, the limits and the groups of metrics.
//
//	r := gin.New()
//	r.Use(gin.Recovery(), ginmw.New(locks)) // locks is a *lockmw.Client; before the routes
//	r.POST("/reports", reports)             // "http:POST /reports"
//	orders := r.Group("/orders", ginmw.New(locks, httpmw.WithPathValues("id")))
//	orders.POST("/:id", updateOrder)        // "http:POST /orders/:id#id=7"
//
// # Placement
//
// gin copies a group's middleware into each route when the route is
// registered (RouterGroup.combineHandlers), so r.Use(ginmw.New(locks)) locks
// the routes registered after it and none registered before: call Use
// first. Every matched route then has its own lock. Per route or per group,
// give New as a handler of the route (r.POST(path, ginmw.New(locks), h)) or
// of the group (r.Group(path, ginmw.New(locks)) or group.Use before its
// routes).
//
// A request that matched no route reaches global middleware through gin's
// 404 and 405 chains (NoRoute, NoMethod) with c.FullPath() == "": it goes on
// unlocked, never answered 500. gin's redirects (trailing slash, fixed path)
// run no middleware at all.
//
// # Keys
//
// The middleware hands httpmw a copy of c.Request whose Pattern is the
// method and gin's route template (c.FullPath()) and whose path values are
// gin's parameters (c.Params). So the default key is
//
//	"http:" + method + " " + c.FullPath()   // "http:POST /orders/:id"
//
// [httpmw.WithPathValues] reads c.Param through r.PathValue
// ("http:POST /orders/:id#id=7", a catch-all "/files/*path" gives
// "#path=%2Fa%2Fb"), and an [httpmw.WithKey] function sees r.Pattern and
// r.PathValue the same way. The key always names the method, so
// [httpmw.WithOneLockPerPath] changes nothing; the host is not in it.
//
// # Busy and refused requests
//
// When a request does not get its lock, httpmw writes its answer into
// c.Writer: the busy status ([httpmw.WithBusyStatus], 409 by default) with a
// Retry-After header; 503 when the request ended while it waited or Redis
// failed; 400 when the key is not a valid lock name or the body could not be
// read. The middleware then calls c.Abort: the handlers after it do not run,
// and those before it see c.IsAborted() and c.Writer.Status() once c.Next
// returns.
//
// # Context
//
// While the rest of the chain runs, c.Request is the request httpmw hands
// its handler: its context, c.Request.Context(), is the hold context,
// cancelled with cause [lockmw.ErrLockLost] when the lock is lost, and a
// nested lock of the same Client and name taken with it re-enters. Its body
// is the one httpmw buffered before the wait ([httpmw.WithBodyBuffer]). The
// original c.Request is put back when the chain returns.
//
// A *gin.Context is itself a context.Context, but its Deadline, Done, Err
// and Value reach c.Request.Context() only when the engine's
// ContextWithFallback is true (gin's context.go, hasRequestContext); it is
// false by default, and then c carries neither the hold nor its
// cancellation. Handlers that pass c where a context.Context is expected
// (db.QueryContext(c, ...), a nested lock) should set
//
//	r.ContextWithFallback = true
//
// or pass c.Request.Context() instead.
//
// A panic in the chain releases the lock and goes on to gin.Recovery (or
// net/http), which answers it.
package ginmw
