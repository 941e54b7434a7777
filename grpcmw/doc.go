// Package grpcmw is grpc-go server middleware that runs the calls of a
// method one at a time, or per resource, or at most n at once, across every
// server of a service: rlock's locks in gRPC's terms.
//
//	i := grpcmw.New(locks) // locks is a *lockmw.Client
//	s := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(i.Unary()),
//		grpc.ChainStreamInterceptor(i.Stream()),
//	)
//
// # Keys
//
// A call's lock is named [KeyPrefix] + its full method by default,
// "rpc:/shop.Orders/Pay": one lock per method, whichever server serves it.
// connectmw gives a Connect handler of the same method the same name
// (Connect handlers speak the gRPC protocol too), so a fleet moving from
// grpc-go to connect-go, or running both, still excludes itself.
// [WithMetadataKey] makes the lock per value of an incoming metadata key
// ("rpc:/shop.Orders/Pay#x-tenant=acme"), [WithKey] names it from the call's
// context, method and request ("" runs the call unlocked, by choice), and
// [WithPermits] lets n calls per key run at once ("rpc:limit:...", a
// [lockmw.Semaphore]). Each lock's [lockmw.WithGroup] is the method's
// default name, so otelhooks counts one series per method, not per
// resource.
//
// # Answers
//
//	the lock stayed busy for the wait       codes.Aborted, errdetails.RetryInfo, trailer grpc-retry-pushback-ms
//	the lock was lost while the handler ran codes.Aborted (also when the handler returned nil)
//	the deadline passed while waiting       codes.DeadlineExceeded
//	the client cancelled while waiting      codes.Canceled
//	the key function failed                 codes.InvalidArgument, with its text
//	no single value of a WithMetadataKey    codes.InvalidArgument
//	Redis failed, the Client was closed     codes.Unavailable
//
// Aborted is gRPC's code for a concurrency conflict that the client may
// retry at a higher level, HTTP 409's counterpart. The retry delay is the
// holder's remaining lease under [WithLease], the remaining TTL of the
// permit that expires first under [WithPermits], else [DefaultRetryAfter];
// a grpc-go client whose service config retries Aborted waits for it
// (gRFC A6's pushback).
//
// # The hold context
//
// The handler runs with the hold context: it is cancelled with cause
// [lockmw.ErrLockLost] when the lock is lost (renewal found it gone, it was
// force-unlocked, or the handler outlived [WithLease]), and a nested lock of
// the same Client and name taken with it re-enters. The lock is released
// when the handler returns or panics.
//
// # Streams
//
// [Interceptor.Stream] locks client-, server- and bidi-streaming calls with
// the same keys and answers. A [WithKey] function gets the stream's first
// message, so the lock is taken at the first RecvMsg; a stream that has sent
// messages when its lock is lost ends [codes.Aborted], its later sends and
// receives refused. See [Interceptor.Stream].
//
// # Composition
//
// Lock only some methods with go-grpc-middleware v2's selector, and give
// methods different settings with several Interceptors, each under its
// selector:
//
//	reports := grpcmw.New(locks, grpcmw.WithWait(0))
//	orders := grpcmw.New(locks, grpcmw.WithMetadataKey("x-order-id"))
//	grpc.ChainUnaryInterceptor(
//		selector.UnaryServerInterceptor(reports.Unary(), selector.MatchFunc(isReport)),
//		selector.UnaryServerInterceptor(orders.Unary(), selector.MatchFunc(isOrder)),
//	)
//
// Tracing goes through otelgrpc.NewServerHandler, a stats handler: its
// server span is in the context the interceptors get, so a Client with
// otelhooks makes the lock's lock.wait and lock.hold spans children of the
// call's span, and the handler's spans children of lock.hold.
package grpcmw
