package connectmw

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/go-rlock/rlock/internal/construct"
	"github.com/go-rlock/rlock/internal/rpclock"
)

// Defaults of the options, grpcmw's.
const (
	// DefaultWait is how long a call waits for its lock when WithWait is not
	// given: as httpmw's and grpcmw's, since a call should not hold a
	// connection long.
	DefaultWait = rpclock.DefaultWait
	// DefaultRetryAfter is the retry delay of a busy answer (its RetryInfo
	// detail and grpc-retry-pushback-ms) when the holder's lease is unknown.
	DefaultRetryAfter = rpclock.DefaultRetryAfter
	// KeyPrefix starts every default lock name: "rpc:" + the procedure, the
	// same in grpcmw.
	KeyPrefix = rpclock.KeyPrefix
)

// Option configures an [Interceptor]. [New] applies the options in order,
// then checks the result once: an invalid value, or a nil Option, makes it
// panic with one line naming the option and the value. Option constructors
// never panic.
type Option func(*config)

type config struct {
	rpclock.Settings
	key          func(ctx context.Context, req connect.AnyRequest) (string, error)
	streamKey    func(ctx context.Context, spec connect.Spec, header http.Header) (string, error)
	keySet       bool // WithKey was given
	streamKeySet bool // WithStreamKey was given
}

// WithKey sets the function that names the lock of a unary call; the name
// is used as is (it is the Redis key of the lock, and [WithHeaderKey]
// suffixes it). The default is [KeyPrefix] + req.Spec().Procedure
// ("rpc:/pkg.Service/Method"), the name grpcmw gives the same method, so
// that connect-go and grpc-go servers of one service exclude each other.
//
// f gets the call's context and request (its message, headers and spec).
// "" runs the call unlocked, by choice; an error answers
// [connect.CodeInvalidArgument] with its text, and the handler does not run.
// f is called once per call, concurrently, and must not block. Streaming
// calls keep their default key unless [WithStreamKey] is given. A nil f
// makes New panic.
func WithKey(f func(ctx context.Context, req connect.AnyRequest) (string, error)) Option {
	return func(c *config) { c.key, c.keySet = f, true }
}

// WithStreamKey sets the function that names the lock of a streaming call
// from its spec and request headers, known before the handler runs (the
// lock is taken then); as [WithKey] otherwise. The default is [KeyPrefix] +
// spec.Procedure. A nil f makes New panic.
func WithStreamKey(f func(ctx context.Context, spec connect.Spec, header http.Header) (string, error)) Option {
	return func(c *config) { c.streamKey, c.streamKeySet = f, true }
}

// WithHeaderKey makes the lock per value of a request header, unary and
// streaming calls alike: the value is appended to the key as
// "#<header>=<value>" (several headers joined with '&', in the order given,
// each value escaped with [url.QueryEscape]), for example
// "rpc:/shop.Orders/Pay#x-tenant=acme", the name grpcmw.WithMetadataKey
// makes from the same gRPC metadata. The header is lower-cased, as gRPC
// metadata keys are. A call that does not carry exactly one value of it is
// answered [connect.CodeInvalidArgument]. A header that is empty, not a
// metadata key, binary ("-bin") or reserved ("grpc-") makes New panic.
func WithHeaderKey(header string) Option {
	return func(c *config) { c.AddHeader("WithHeaderKey", header) }
}

// WithWait sets how long a call waits for its lock before it is answered
// [connect.CodeAborted], as [lockmw.WithWait] does: 0 makes a single
// attempt, and [lockmw.Forever] waits until the call's deadline or
// cancellation. A call never waits past its deadline: it is then answered
// [connect.CodeDeadlineExceeded] ([connect.CodeCanceled] when the client
// cancelled), and leaves the lock's queue at once. The default is
// [DefaultWait] (10s). A negative d makes New panic.
func WithWait(d time.Duration) Option {
	return func(c *config) { c.Wait = d }
}

// WithPermits lets at most n calls with the same key run at once instead of
// one: the key's lock is a [lockmw.Semaphore] of n permits, named with
// "limit:" after "rpc:" as grpcmw's. The default is 1: a mutex. n < 1 makes
// New panic.
func WithPermits(n int) Option {
	return func(c *config) { c.Permits = n }
}

// WithLease holds each call's lock with a lease of d instead of the
// watchdog, as grpcmw.WithLease: the handler's context has a deadline at
// the lease end, a call that outlives it ends [connect.CodeAborted], and a
// busy answer's retry delay is the holder's remaining TTL. The default is 0:
// the watchdog. A negative d makes New panic.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.Lease = d }
}

// newConfig applies opts over the defaults, in order, then checks the result
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value.
func newConfig(opts []Option) config {
	return construct.Apply("connectmw", "New", config{Settings: rpclock.DefaultSettings()}, opts, (*config).invalid)
}

// invalid describes the first invalid value of c, "" when there is none.
func (c *config) invalid() string {
	switch {
	case c.keySet && c.key == nil:
		return "WithKey(nil): a key function is required"
	case c.streamKeySet && c.streamKey == nil:
		return "WithStreamKey(nil): a key function is required"
	}
	return c.Settings.Invalid()
}
