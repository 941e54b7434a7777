package grpcmw

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/internal/construct"
	"github.com/go-rlock/rlock/internal/rpclock"
)

// Defaults of the options.
const (
	// DefaultWait is how long a call waits for its lock when WithWait is not
	// given: as httpmw's, since a call should not hold a connection long.
	DefaultWait = rpclock.DefaultWait
	// DefaultRetryAfter is the retry delay of a busy answer (RetryInfo and
	// the grpc-retry-pushback-ms trailer) when the holder's lease is unknown.
	DefaultRetryAfter = rpclock.DefaultRetryAfter
	// KeyPrefix starts every default lock name: "rpc:" + the full method,
	// the same in connectmw.
	KeyPrefix = rpclock.KeyPrefix
)

// Option configures an [Interceptor]. [New] applies the options in order,
// then checks the result once: an invalid value, or a nil Option, makes it
// panic with one line naming the option and the value. Option constructors
// never panic.
type Option func(*config)

type config struct {
	rpclock.Settings
	key       func(ctx context.Context, fullMethod string, req any) (string, error)
	customKey bool // WithKey was given
}

// WithKey sets the function that names a call's lock; the name is used as
// is (it is the Redis key of the lock, and [WithMetadataKey] suffixes it).
// The default is [KeyPrefix] + info.FullMethod ("rpc:/pkg.Service/Method"),
// the name connectmw gives the same method, so that grpc-go and connect-go
// servers of one service exclude each other.
//
// f gets the call's context (its incoming metadata), the full method and
// the request: for a unary call the request message; for a stream the
// first message the client sends (nil when it sends none), so that the lock
// of a stream under WithKey is taken at its first receive (see
// [Interceptor.Stream]). "" runs the call unlocked, by choice; an error
// answers [codes.InvalidArgument] with its text, and the handler does not
// run. f is called once per call, concurrently, and must not block. A nil f
// makes New panic.
func WithKey(f func(ctx context.Context, fullMethod string, req any) (string, error)) Option {
	return func(c *config) { c.key, c.customKey = f, true }
}

// WithMetadataKey makes the lock per value of an incoming metadata key
// (lower-cased: gRPC metadata keys are): the value is appended to the key,
// so that two calls of one method for tenants "acme" and "globex" run in
// parallel while two for "acme" do not. The name becomes
//
//	<key>#<header>=<value>&<header>=<value>...
//
// in the order given, each value escaped with [url.QueryEscape], for example
// "rpc:/shop.Orders/Pay#x-tenant=acme"; connectmw.WithHeaderKey makes the
// same name from the same header. A call that does not carry exactly one
// value of the key is answered [codes.InvalidArgument]. Several calls add
// keys. A key that is empty, not a metadata key, binary ("-bin") or
// reserved ("grpc-") makes New panic.
func WithMetadataKey(header string) Option {
	return func(c *config) { c.AddHeader("WithMetadataKey", header) }
}

// WithWait sets how long a call waits for its lock before it is answered
// [codes.Aborted], as [lockmw.WithWait] does: 0 makes a single attempt, and
// [lockmw.Forever] waits until the call's deadline or cancellation. A call
// never waits past its deadline: it is then answered
// [codes.DeadlineExceeded] ([codes.Canceled] when the client cancelled), and
// leaves the lock's queue at once. The default is [DefaultWait] (10s). A
// negative d makes New panic.
func WithWait(d time.Duration) Option {
	return func(c *config) { c.Wait = d }
}

// WithPermits lets at most n calls with the same key run at once instead of
// one: the key's lock is a [lockmw.Semaphore] of n permits, across every
// server whose Interceptors agree on n. Its name has "limit:" after "rpc:"
// ("rpc:limit:/pkg.Service/Method"; in front of a [WithKey] name that does
// not start with "rpc:"), so that it never shares a Redis key with a
// method's mutex. A call that finds no free permit is answered as one that
// finds a mutex busy, its retry delay the remaining TTL of the permit that
// expires first. A permit is not reentrant. The default is 1: a mutex. n < 1
// makes New panic.
func WithPermits(n int) Option {
	return func(c *config) { c.Permits = n }
}

// WithLease holds each call's lock with a lease of d instead of the
// watchdog: the lock expires d after it was taken and is never renewed, so
// the handler's context has a deadline at the lease end, and a call that
// outlives it ends [codes.Aborted]. In exchange a busy answer can say when
// the holder will be done: its retry delay is the holder's remaining TTL.
// Use it only when every holder of these keys holds them with a lease. The
// default is 0: the watchdog renews the lock while the handler runs, and the
// retry delay is [DefaultRetryAfter]. A negative d makes New panic.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.Lease = d }
}

// newConfig applies opts over the defaults, in order, then checks the result
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value.
func newConfig(opts []Option) config {
	return construct.Apply("grpcmw", "New", config{Settings: rpclock.DefaultSettings()}, opts, (*config).invalid)
}

// invalid describes the first invalid value of c, "" when there is none.
func (c *config) invalid() string {
	switch {
	case c.customKey && c.key == nil:
		return "WithKey(nil): a key function is required"
	}
	return c.Settings.Invalid()
}
