package fibermw

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// New returns a fiber handler that runs the rest of a route's chain one
// request at a time per lock key (at most [WithPermits] at a time), with
// locks taken through c. Give it to a route, before the route's handler:
//
//	app.Post("/orders/:id", fibermw.New(locks, fibermw.WithParams("id")), updateOrder)
//
// Registered with Use (app.Use, a group's Use or its handlers, a
// RouteChain's All) it does not know the route, and refuses every request
// with 500 (see the package documentation).
//
// Each request waits for its lock as [httpmw.Middleware.Wrap] does; when it
// gets it, the rest of the chain runs with the hold context as c.Context(),
// and the handler returns what c.Next() returned. When it does not, the
// refusal (the busy status with Retry-After, 503, 400) is written on c's
// response and the handler returns nil without calling c.Next().
//
// New panics when c is nil, an option is nil or an option's value is
// invalid (see [Option]): that is configuration that can never be right.
func New(c *lockmw.Client, opts ...Option) fiber.Handler {
	if c == nil {
		panic("fibermw: New(nil): a lockmw.Client is required")
	}
	cfg := newConfig(opts)
	h := &handler{key: cfg.key, params: cfg.params}
	hopts := append([]httpmw.Option{httpmw.WithBodyBuffer(0)}, cfg.httpmw...)
	if h.key != nil {
		hopts = append(hopts, httpmw.WithKey(h.userKey))
	}
	h.m = newMiddleware(c, hopts)
	return h.serve
}

// newMiddleware is httpmw.New(c, opts...), whose panics on invalid options
// are re-worded as this package's: the prefix "fibermw: ", and WithParams
// for the WithPathValues it maps onto.
func newMiddleware(c *lockmw.Client, opts []httpmw.Option) *httpmw.Middleware {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if msg, ok := v.(string); ok {
			if rest, ok := strings.CutPrefix(msg, "httpmw: "); ok {
				v = "fibermw: " + strings.Replace(rest, "WithPathValues(", "WithParams(", 1)
			}
		}
		panic(v)
	}()
	return httpmw.New(c, opts...)
}

// handler is what New returns a method of.
type handler struct {
	m      *httpmw.Middleware
	key    func(fiber.Ctx) string // WithKey; nil for the default
	params []string               // WithParams
}

// fiberCtx is the key of the request's fiber.Ctx in the context of the
// request handed to httpmw, for the WithKey function.
type fiberCtx struct{}

// serve locks the request's route (or resource) around the rest of the
// chain.
func (h *handler) serve(c fiber.Ctx) error {
	// fiber sets Matched only once a route that is not a Use matched
	// (router.go, App.next): before that the handler runs as a Use and
	// c.Route() is the Use's prefix, not a route.
	cl := &call{c: c}
	if !c.Matched() {
		h.m.RefuseMisplaced(cl, h.request(c), misplacedWhy)
		return nil
	}
	h.m.Wrap(cl).ServeHTTP(cl, h.request(c))
	if !cl.ran {
		return nil // httpmw wrote its refusal on c's response
	}
	return cl.err
}

// request builds the request httpmw sees: the route's method and path as
// its Pattern, the WithParams parameters as path values, c.Context() as its
// context (with c in it for a WithKey function), and no body (fasthttp has
// read it already). Nothing of c's zero-copy strings reaches the lock: the
// Pattern is a new string (route.Path belongs to the route, not to the
// request), and httpmw copies the path values into the key it builds.
func (h *handler) request(c fiber.Ctx) *http.Request {
	route := c.Route()
	ctx := c.Context()
	if h.key != nil {
		ctx = context.WithValue(ctx, fiberCtx{}, c)
	}
	r := emptyRequest.WithContext(ctx)
	r.Method = route.Method
	r.URL = &url.URL{Path: c.Path()}
	r.Body = http.NoBody
	r.Pattern = route.Method + " " + route.Path
	for _, name := range h.params {
		r.SetPathValue(name, c.Params(name))
	}
	return r
}

// emptyRequest is the request that request copies, never changed.
var emptyRequest = new(http.Request)

// userKey is the WithKey function as httpmw's key function. Its result is
// cloned: it may be a zero-copy string of c, which fasthttp reuses after
// the handler returns, while the lock's name lives on in lockmw.
func (h *handler) userKey(r *http.Request) string {
	return strings.Clone(h.key(r.Context().Value(fiberCtx{}).(fiber.Ctx)))
}
