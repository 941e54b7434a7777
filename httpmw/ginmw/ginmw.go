package ginmw

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// New returns gin middleware that runs the requests of a route one at a time
// (or at most [httpmw.WithPermits] at a time) across every instance of a
// service, with httpmw's semantics and options: the lock of a request is
// named "http:" + method + " " + c.FullPath(), such as
// "http:POST /orders/:id", and [httpmw.WithPathValues] appends gin's path
// parameters ("http:POST /orders/:id#id=7").
//
// Register it globally before the routes (gin copies the chain into each
// route when the route is registered), or on a route or a group:
//
//	r.Use(ginmw.New(locks))                       // before r.POST, r.GET...
//	r.POST("/reports", ginmw.New(locks), reports) // one route
//	orders := r.Group("/orders", ginmw.New(locks, httpmw.WithPathValues("id")))
//
// A request that matched no route (gin's 404 and 405 handlers, where
// c.FullPath() is "") goes on unlocked. A matched request waits for its
// lock; once it has it, the rest of the chain runs with c.Request carrying
// the hold context (see the package documentation), and the lock is
// released when the chain returns or panics (the panic goes on, to
// gin.Recovery). A request that does not get the lock is answered by httpmw
// (the busy status with Retry-After, 503, 400...) and the chain is ended
// with c.Abort.
//
// New panics, as [httpmw.New] does and with its messages, when c is nil, an
// option is nil or an option's value is invalid.
func New(c *lockmw.Client, opts ...httpmw.Option) gin.HandlerFunc {
	m := httpmw.New(c, opts...)
	return func(gc *gin.Context) {
		route := gc.FullPath()
		if route == "" { // no route matched: gin answers 404 or 405
			gc.Next()
			return
		}
		orig := gc.Request
		ran := false
		m.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			// r is the request httpmw hands the handler: the hold context,
			// and the body it buffered before the wait. w is gc.Writer.
			ran = true
			gc.Request = r
			defer func() { gc.Request = orig }()
			gc.Next()
		})).ServeHTTP(gc.Writer, routed(orig, route, gc.Params))
		if !ran { // httpmw has answered: busy, ended, unavailable, bad request
			gc.Abort()
		}
	}
}

// routed is a copy of r as a ServeMux would have routed it: its Pattern is
// the method and gin's route template, its path values gin's parameters.
// Clone, not WithContext: a shallow copy shares r's path values, and
// SetPathValue would overwrite those of a ServeMux that serves gin under a
// wildcard named like a gin parameter (net/http's Clone copies them, Go
// issue 61410).
func routed(r *http.Request, route string, params gin.Params) *http.Request {
	cp := r.Clone(r.Context())
	cp.Pattern = r.Method + " " + route
	for _, p := range params {
		cp.SetPathValue(p.Key, p.Value)
	}
	return cp
}
