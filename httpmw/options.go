package httpmw

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode"

	"github.com/go-rlock/rlock/internal/construct"
)

// Defaults of the options.
const (
	// DefaultWait is how long a request waits for its turn when WithWait
	// is not given.
	DefaultWait = 10 * time.Second
	// DefaultBusyStatus is the status of a request that did not get its turn.
	DefaultBusyStatus = http.StatusConflict
	// DefaultRetryAfter is the Retry-After hint of a busy answer when the
	// holder's lease is unknown.
	DefaultRetryAfter = time.Second
	// DefaultBodyBuffer is how many bytes of a request's body are read before
	// the wait by default.
	DefaultBodyBuffer = 64 << 10
	// KeyPrefix starts every default lock name.
	KeyPrefix = "http:"
)

// limitInfix follows KeyPrefix in the name of a semaphore of more than one
// permit (see WithPermits), as asynqmw's follows its prefix.
const limitInfix = "limit:"

// rwInfix follows KeyPrefix in the name of a read-write lock (see
// WithReadWrite), so that it never shares a Redis key with a route's mutex.
const rwInfix = "rw:"

// Option configures a [Middleware]. [New] applies the options in order, then
// checks the result once: an invalid value, or a nil Option, makes it panic
// with one line naming the option and the value. Option constructors never
// panic.
type Option func(*config)

type config struct {
	key        func(r *http.Request) string
	customKey  bool // WithKey was given
	perPath    bool // WithOneLockPerPath
	logger     *slog.Logger
	pathValues []string
	wait       time.Duration
	lease      time.Duration
	busyStatus int
	retryAfter time.Duration
	bodyBuffer int64
	permits    int
	readWrite  bool                                // WithReadWrite
	noNames    bool                                // WithPathValues was given no names
	loggerSet  bool                                // WithLogger was given
	onSkip     func(r *http.Request, reason error) // nil: none
	onSkipSet  bool                                // WithOnSkip was given (a nil func panics)
}

func defaultConfig() config {
	return config{
		key:        PatternKey,
		wait:       DefaultWait,
		busyStatus: DefaultBusyStatus,
		retryAfter: DefaultRetryAfter,
		bodyBuffer: DefaultBodyBuffer,
		permits:    1,
	}
}

// WithKey sets the function that names the lock of a request; the name is
// used as is (it is the Redis key of the lock). An empty name means that the
// request runs without a lock. A name the lock cannot use (longer than
// [lockmw.MaxNameLen] bytes, invalid UTF-8, control characters) answers 400
// Bad Request. f is called once per request, concurrently, and must not
// block.
//
// The default is [PatternKey]: [KeyPrefix] + the method and the pattern
// that matched, such as "http:POST /orders/{id}". Under the default a
// request that reaches [Middleware.Wrap] without a pattern is refused (see
// Wrap); a function given here is trusted instead: its "" runs the request
// unlocked, by choice. A nil f makes New panic.
func WithKey(f func(r *http.Request) string) Option {
	return func(c *config) { c.key, c.customKey = f, true }
}

// WithOnSkip sets a function called for each request the middleware
// answered itself, without running the handler (see [Middleware.Wrap]),
// with the reason: an error matching lockmw.ErrNotAcquired (the lock stayed
// busy; errors.As finds the *lockmw.BusyError), lockmw.ErrInvalidName,
// lockmw.ErrUpgrade, the error reading the body, [ErrMisplaced], or the
// Redis error. It is called on the request's goroutine before the answer
// is written, and must be safe for concurrent use. Each such request is
// also reported to the Client's Skip hooks ([lockmw.Hooks.Skip], otelhooks'
// lock.skips), which count them without it. The default is none. A nil f
// makes New panic.
func WithOnSkip(f func(r *http.Request, reason error)) Option {
	return func(c *config) { c.onSkip, c.onSkipSet = f, true }
}

// WithOneLockPerPath makes the default key leave out the request's method
// when the pattern names none: GET and POST of the pattern "/orders/{id}"
// then share the lock "http:/orders/{id}". The default is one lock per
// method and pattern ([PatternKey]). It changes nothing for patterns that
// name a method, nor for a [WithKey] function.
func WithOneLockPerPath() Option {
	return func(c *config) { c.perPath = true }
}

// WithLogger sets where the middleware reports a misplaced mounting (see
// [Middleware.Wrap]), once per Middleware. The default is [slog.Default]
// at the time of New. A nil l makes New panic.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger, c.loggerSet = l, true }
}

// WithPathValues makes the lock per resource: the values of these path
// wildcards (r.PathValue) are appended to the key, so that POST /orders/1 and
// POST /orders/2 run in parallel while two POST /orders/1 do not. The key
// becomes
//
//	<key>#<name>=<value>&<name>=<value>...
//
// in the order given, each value escaped with [url.QueryEscape], for example
// "http:POST /orders/{id}#id=1". Several calls add names. A wildcard the
// pattern does not have counts as the empty value.
//
// Path values are only set by the time [Middleware.Wrap]'s handler runs
// inside a ServeMux; [Middleware.WrapMux] panics on a Middleware with path
// values. The default is no path values (one lock per route). Names must be
// wildcard names (Go identifiers); others make New panic.
func WithPathValues(names ...string) Option {
	names = append([]string(nil), names...)
	return func(c *config) {
		c.pathValues = append(c.pathValues, names...)
		c.noNames = c.noNames || len(names) == 0
	}
}

// WithWait sets how long a request waits for its turn (a busy lock) before
// it gets the busy status, as [lockmw.WithWait] does: 0 makes a single
// attempt and rejects at once, and [lockmw.Forever] waits until the
// request's context ends. A request never waits past its own context: a
// client that goes away stops waiting at once. The default is [DefaultWait]
// (10s), because a request should not hold a connection long. A negative d
// makes New panic.
func WithWait(d time.Duration) Option {
	return func(c *config) { c.wait = d }
}

// WithLease holds each request's lock with a lease of d instead of the
// watchdog: the lock expires d after it was taken and is never renewed, so
// r.Context() has a deadline at the lease end and a handler that outlives it
// loses the lock. In exchange, a busy answer can say when the holder will be
// done: its Retry-After is the holder's remaining TTL (under [WithPermits] it
// is the remaining TTL of the permit that expires first anyway). Use it only when every
// holder of these keys (every instance of the service) holds them with a
// lease; a watchdog-renewed TTL says nothing about when the holder finishes.
// The default is 0: the watchdog renews the lock for as long as the handler
// runs, and Retry-After is the [WithRetryAfter] hint. A negative d makes New panic.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease = d }
}

// WithBusyStatus sets the status of a request that did not get its turn
// within the wait, for example http.StatusTooManyRequests or
// http.StatusServiceUnavailable. The default is [DefaultBusyStatus] (409
// Conflict). A code outside 400–599 makes New
// panic.
func WithBusyStatus(code int) Option {
	return func(c *config) { c.busyStatus = code }
}

// WithRetryAfter sets the Retry-After hint of a busy answer when the holder's
// remaining lease is unknown, which is always the case without [WithLease];
// with WithLease the remaining lease wins, and the hint is sent only when
// the holder turns out to have no TTL. The same holds under [WithPermits],
// where the holder is the permit that expires first.
// It is sent in whole seconds, rounded up, at least 1 (so 0 means 1s). The
// default is [DefaultRetryAfter] (1s). A negative d makes New panic.
func WithRetryAfter(d time.Duration) Option {
	return func(c *config) { c.retryAfter = d }
}

// WithBodyBuffer sets how many bytes of a request's body are read into
// memory before the request waits for its turn. An HTTP/1.x server notices
// that a client went away (and cancels r.Context()) only after the request's
// body was read to its end, so without this a client that disconnects while
// sending a body would keep waiting, and its handler could even run. Bodies
// of a known length above n, and bodies behind "Expect: 100-continue", are
// left unread (such a waiter stops at the end of its wait); a chunked body
// longer than n is replayed from the n bytes read followed by the rest. The
// handler reads the body as usual. The default is [DefaultBodyBuffer] (64
// KiB); 0 reads nothing before the wait. A negative n makes New panic.
func WithBodyBuffer(n int64) Option {
	return func(c *config) { c.bodyBuffer = n }
}

// WithPermits makes the key's lock a semaphore of n permits instead of a
// mutex, as [lockmw.WithPermits] does: at most n requests with the same key
// run at once, across every instance. The default is 1, one at a time.
//
// With n = 1 the key's lock is a [lockmw.Mutex] named by the key, as it has
// always been. With n > 1 it is a [lockmw.Semaphore] of n permits named by
// the key with "limit:" inserted after [KeyPrefix], as asynqmw inserts it
// after its own prefix: "http:POST /exports" becomes
// "http:limit:POST /exports" and "http:POST /o/{id}#id=1" becomes
// "http:limit:POST /o/{id}#id=1"; a key that does not start with KeyPrefix
// (a [WithKey] name) gets "limit:" in front: "tenant:7" becomes
// "limit:tenant:7". No default key is ever such a name, so instances with
// n = 1 and n > 1 on one route do not block each other: during a rolling
// deploy from n = 1 to n = 3 up to 1 + 3 requests may run at once (a
// WithKey function must not return names starting with "limit:" for the
// same to hold). Instances that disagree on n > 1 share one semaphore,
// whose size the first instance to use it sets (see [lockmw.Semaphore]).
//
// A request that finds no free permit waits, answers and leaves the queue as one
// waiting for a mutex does (see [WithWait], [WithBusyStatus],
// [WithRetryAfter]), except that its Retry-After is the remaining TTL of the
// permit that expires first, rounded up (a watchdog permit's is at most the
// watchdog timeout: the latest a permit comes back even if its holder
// dies); the hint only when that TTL is unknown. A permit is not reentrant: a nested
// Wrap with the same key takes a second permit (and waits for itself when
// none is left). n < 1 makes New panic.
func WithPermits(n int) Option {
	return func(c *config) { c.permits = n }
}

// WithReadWrite makes the key's lock a read-write lock ([lockmw.RWMutex])
// instead of a mutex: requests with a safe method (GET, HEAD, OPTIONS and
// TRACE, RFC 9110 section 9.2.1) share its read side and run together; the
// others (POST, PUT, PATCH, DELETE, …) take its write side, one at a time and
// never beside a reader. Waiting readers and writers take turns (see
// docs/rwmutex.md): a stream of reads does not starve a write.
//
// Reads and writes of one resource must meet on one lock, so under the
// default key the method is left out of the name: "GET /orders/{id}" and
// "POST /orders/{id}" (or a method-less "/orders/{id}") both lock
// "http:rw:/orders/{id}", per resource with [WithPathValues]. A [WithKey]
// function names the read-write lock ("rw:" is inserted as for a limit); the
// request's method still picks the side. A nested Wrap with the same key
// re-enters: a write may read, but a read that reaches a write of its own
// lock is refused with 500 Internal Server Error ([lockmw.ErrUpgrade]: it
// would wait for itself).
//
// A read-write lock has no permits: WithReadWrite with [WithPermits] above 1
// makes New panic.
func WithReadWrite() Option {
	return func(c *config) { c.readWrite = true }
}

// newConfig applies opts over the defaults, in order, then checks the result
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value.
func newConfig(opts []Option) config {
	c := defaultConfig()
	c = construct.Apply("httpmw", "New", c, opts, (*config).invalid)
	switch {
	case c.customKey:
	case c.readWrite:
		c.key = resourceKey
	case c.perPath:
		c.key = pathKey
	}
	if !c.loggerSet {
		c.logger = slog.Default()
	}
	return c
}

// invalid describes the first invalid value of c, "" when there is none.
func (c *config) invalid() string {
	switch {
	case c.customKey && c.key == nil:
		return "WithKey(nil): a key function is required"
	case c.loggerSet && c.logger == nil:
		return "WithLogger(nil): a logger is required"
	case c.onSkipSet && c.onSkip == nil:
		return "WithOnSkip(nil): a function is required"
	case c.noNames:
		return "WithPathValues(): at least one wildcard name is required"
	case c.wait < 0:
		return fmt.Sprintf("WithWait(%v): must not be negative", c.wait)
	case c.lease < 0:
		return fmt.Sprintf("WithLease(%v): must not be negative", c.lease)
	case c.busyStatus < 400 || c.busyStatus > 599:
		return fmt.Sprintf("WithBusyStatus(%d): must be a 4xx or 5xx status", c.busyStatus)
	case c.retryAfter < 0:
		return fmt.Sprintf("WithRetryAfter(%v): must not be negative", c.retryAfter)
	case c.bodyBuffer < 0:
		return fmt.Sprintf("WithBodyBuffer(%d): must not be negative", c.bodyBuffer)
	case c.permits < 1:
		return fmt.Sprintf("WithPermits(%d): must be at least 1", c.permits)
	case c.readWrite && c.permits > 1:
		return fmt.Sprintf("WithReadWrite with WithPermits(%d): a read-write lock has no permits", c.permits)
	}
	for _, n := range c.pathValues {
		if !isWildcardName(n) {
			return fmt.Sprintf("WithPathValues(%q): not a wildcard name", n)
		}
	}
	return ""
}

// isWildcardName reports whether s can name a ServeMux wildcard: letters,
// digits and underscores, not starting with a digit.
func isWildcardName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && r != '_' && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}
