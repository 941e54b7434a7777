package fibermw

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/construct"
)

// Option configures the handler [New] returns. New applies the options in
// order, then checks the result once: an invalid value, or a nil Option,
// makes it panic with one line naming the option and the value
// ("fibermw: WithWait(-1s): must not be negative"). Option constructors
// never panic.
//
// Most options are [httpmw]'s under the same name, with the same defaults
// and the same checks; they are given to the httpmw.Middleware that New
// builds, in the order given.
type Option func(*config)

type config struct {
	key    func(c fiber.Ctx) string // nil: httpmw.PatternKey
	keySet bool                     // WithKey was given
	params []string                 // WithParams, in order
	httpmw []httpmw.Option          // the options New hands httpmw.New, in order
}

// WithKey sets the function that names the lock of a request, given the
// request's fiber.Ctx; the name is used as is (it is the Redis key of the
// lock). An empty name means that the request runs without a lock, by
// choice. A name the lock cannot use (longer than [lockmw.MaxNameLen]
// bytes, invalid UTF-8, control characters) answers 400 Bad Request. f is
// called once per request, concurrently, before the request waits, and must
// not block; the name it returns is copied, so it may be built from fiber's
// zero-copy strings (c.Params, c.Get).
//
// The default is the route's key: [httpmw.KeyPrefix] + the route's method
// and path as registered, "http:POST /orders/:id" (see the package
// documentation). A nil f makes New panic.
//
// [lockmw.MaxNameLen]: https://pkg.go.dev/github.com/go-rlock/rlock/lockmw#MaxNameLen
func WithKey(f func(c fiber.Ctx) string) Option {
	return func(c *config) { c.key, c.keySet = f, true }
}

// WithParams makes the lock per resource: the values of these route
// parameters (c.Params(name)) are appended to the key, so that POST
// /orders/1 and POST /orders/2 run in parallel while two POST /orders/1 do
// not:
//
//	"http:POST /orders/:id#id=1"
//
// It is [httpmw.WithPathValues] with fiber's parameters as the path values:
// the same format, escaping and order; several calls add names, and a name
// the route does not have counts as the empty value. Names are the named
// parameters of the route (":id" is "id"); fiber's unnamed wildcards "*"
// and "+" cannot be named here (use [WithKey]). The default is no
// parameters (one lock per route). A name that is not a Go identifier, or a
// call without names, makes New panic.
func WithParams(names ...string) Option {
	names = append([]string(nil), names...)
	return func(c *config) {
		c.params = append(c.params, names...)
		c.httpmw = append(c.httpmw, httpmw.WithPathValues(names...))
	}
}

// WithWait sets how long a request waits for its turn (a busy lock) before
// it gets the busy status; 0 makes a single attempt and rejects at once. The
// default is [httpmw.DefaultWait] (10s), because a request should not hold a
// connection long. fasthttp does not tell a handler that its
// client went away, so a request waits out its wait even then (see the
// package documentation): keep it short, and do not use [lockmw.Forever]
// unless an earlier middleware puts a deadline on c.Context(). A negative d
// makes New panic. See [httpmw.WithWait].
//
// [lockmw.Forever]: https://pkg.go.dev/github.com/go-rlock/rlock/lockmw#Forever
func WithWait(d time.Duration) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithWait(d)) }
}

// WithLease holds each request's lock with a lease of d instead of the
// watchdog, so that a busy answer's Retry-After is the holder's remaining
// lease; c.Context() then has a deadline at the lease end. The default is 0
// (the watchdog). A negative d makes New panic. See [httpmw.WithLease].
func WithLease(d time.Duration) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithLease(d)) }
}

// WithBusyStatus sets the status of a request that did not get its turn
// within the wait, for example fiber.StatusTooManyRequests. The default is
// [httpmw.DefaultBusyStatus] (409 Conflict). A code outside 400–599 makes
// New panic. See [httpmw.WithBusyStatus].
func WithBusyStatus(code int) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithBusyStatus(code)) }
}

// WithRetryAfter sets the Retry-After hint of a busy answer when the
// holder's remaining lease is unknown, sent in whole seconds, rounded up, at
// least 1. The default is [httpmw.DefaultRetryAfter] (1s). A negative d makes
// New panic. See [httpmw.WithRetryAfter].
func WithRetryAfter(d time.Duration) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithRetryAfter(d)) }
}

// WithPermits makes the key's lock a semaphore of n permits instead of a
// mutex: at most n requests with the same key run at once, across every
// instance; with n > 1 the semaphore is named with "limit:" after the prefix
// ("http:limit:POST /exports"). The default is 1, one at a time.
// n < 1 makes New panic. See [httpmw.WithPermits].
func WithPermits(n int) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithPermits(n)) }
}

// WithReadWrite makes the key's lock a read-write lock instead of a mutex:
// GET, HEAD, OPTIONS and TRACE share its read side, every other method takes
// its write side. Under the default key the method is left out of the name
// ("http:rw:/docs/:id"), so that a route's reads and writes meet on one
// lock. With WithPermits above 1 New panics. See [httpmw.WithReadWrite].
func WithReadWrite() Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithReadWrite()) }
}

// WithLogger sets where the handler reports that it was registered where
// no route is known (with Use, see the package documentation), once per
// handler. The default is [slog.Default] at the time of New. A nil l makes
// New panic. See [httpmw.WithLogger].
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.httpmw = append(c.httpmw, httpmw.WithLogger(l)) }
}

// newConfig applies opts in order, then checks the options of this package
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value. httpmw checks its own options in New.
func newConfig(opts []Option) config {
	return construct.Apply("fibermw", "New", config{}, opts, (*config).invalid)
}

// invalid describes the first invalid value of this package's options, ""
// when there is none.
func (c *config) invalid() string {
	switch {
	case c.keySet && c.key == nil:
		return "WithKey(nil): a key function is required"
	}
	return ""
}
