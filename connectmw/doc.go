// Package connectmw is a connect-go interceptor that runs the calls of a
// procedure one at a time, or per resource, or at most n at once, across
// every server of a service: grpcmw's locks and answers for
// connectrpc.com/connect handlers, on the same mechanism.
//
//	i := connectmw.New(locks) // locks is a *lockmw.Client
//	path, h := pingv1connect.NewPingServiceHandler(svc, connect.WithInterceptors(i))
//
// # Keys
//
// A call's lock is named [KeyPrefix] + its procedure by default,
// "rpc:/shop.Orders/Pay": grpcmw's name for the same method, so a
// connect-go server and a grpc-go server of one service exclude each other
// (Connect handlers speak the gRPC protocol too, and a fleet may move from
// one to the other). [WithHeaderKey] makes the lock per value of a request
// header ("rpc:/shop.Orders/Pay#x-tenant=acme", as grpcmw.WithMetadataKey),
// [WithKey] names a unary call's lock from its request, [WithStreamKey] a
// stream's from its spec and headers ("" runs the call unlocked, by
// choice), and [WithPermits] lets n calls per key run at once. Each lock's
// [lockmw.WithGroup] is the procedure's default name, so otelhooks counts
// one series per procedure.
//
// # Answers
//
//	the lock stayed busy for the wait       connect.CodeAborted, errdetails.RetryInfo detail, grpc-retry-pushback-ms
//	the lock was lost while the handler ran connect.CodeAborted (also when the handler succeeded)
//	the deadline passed while waiting       connect.CodeDeadlineExceeded
//	the client cancelled while waiting      connect.CodeCanceled
//	the key function failed                 connect.CodeInvalidArgument, with its text
//	no single value of a WithHeaderKey      connect.CodeInvalidArgument
//	Redis failed, the Client was closed     connect.CodeUnavailable
//
// The codes and messages are grpcmw's, over each of Connect's protocols
// (Connect, gRPC, gRPC-Web) and over HTTP/1.1 and HTTP/2.
//
// # The hold context
//
// The handler runs with the hold context: it is cancelled with cause
// [lockmw.ErrLockLost] when the lock is lost, and a nested lock of the same
// Client and name taken with it re-enters. The lock is released when the
// handler returns or panics.
//
// # Clients and streams
//
// The Interceptor locks what a handler serves; on a client
// (connect.WithInterceptors on NewClient) its unary calls
// (req.Spec().IsClient) and streams pass through. Streams are locked before
// the handler runs, from the spec and headers; see
// [Interceptor.WrapStreamingHandler].
package connectmw
