package connectmw

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/go-rlock/rlock/internal/rpclock"
	"github.com/go-rlock/rlock/lockmw"
)

// Interceptor is a [connect.Interceptor] that runs the calls that share a
// lock key one at a time (or at most [WithPermits] at once) across every
// server whose Interceptors, connectmw's or grpcmw's, use lockmw Clients on
// the same Redis. It is configured once by [New] and safe for concurrent
// use.
type Interceptor struct {
	cfg  config
	core *rpclock.Core
}

var _ connect.Interceptor = (*Interceptor)(nil)

// New returns an Interceptor that takes its locks through c, for a
// handler's options:
//
//	path, h := pingv1connect.NewPingServiceHandler(svc, connect.WithInterceptors(connectmw.New(locks)))
//
// It panics when c is nil, an option is nil or an option's value is
// invalid (see [Option]): that is configuration that can never be right.
func New(c *lockmw.Client, opts ...Option) *Interceptor {
	if c == nil {
		panic("connectmw: New(nil): a lockmw.Client is required")
	}
	cfg := newConfig(opts)
	return &Interceptor{cfg: cfg, core: rpclock.New(c, cfg.Settings, lockmw.AdapterConnect)}
}

// WrapUnary locks the unary calls a handler serves; a client's calls
// (req.Spec().IsClient) pass through. Each call computes its key (see
// [WithKey], [WithHeaderKey]) and waits for its lock (see [WithWait]), then:
//
//   - it got the lock: the handler runs with the hold context, which is
//     cancelled with cause [lockmw.ErrLockLost] when the lock is lost; the
//     lock is released when the handler returns or panics. When the lock
//     was lost meanwhile the call ends [connect.CodeAborted], also when the
//     handler succeeded: another call may have run beside it.
//   - the lock stayed busy: [connect.CodeAborted] with an
//     [errdetails.RetryInfo] error detail and grpc-retry-pushback-ms in the
//     error's metadata (a gRPC-protocol trailer) saying when to come back:
//     the holder's remaining lease under [WithLease], the remaining TTL of
//     the first permit to expire under [WithPermits], else
//     [DefaultRetryAfter].
//   - the call's deadline passed, or the client cancelled, while it waited:
//     [connect.CodeDeadlineExceeded] or [connect.CodeCanceled].
//   - the key function failed, or the name cannot be a lock's:
//     [connect.CodeInvalidArgument].
//   - Redis failed or the Client was closed: [connect.CodeUnavailable].
//
// Each call refused before its handler ran is reported to the Client's Skip
// hooks ([lockmw.Hooks.Skip]; otelhooks counts it in lock.skips, with
// lock.adapter connect): reason busy (also when the call's context ended
// during a busy wait), refused (the key) or error. Every lock's events
// carry lock.adapter connect ([lockmw.WithAdapter]).
//
// The error wraps what lockmw returned, for the server's own interceptors
// (errors.Is(err, lockmw.ErrNotAcquired)); the client gets the code and a
// message that never includes a Redis error.
func (i *Interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		spec := req.Spec()
		if spec.IsClient {
			return next(ctx, req)
		}
		k := rpclock.MethodKey(spec.Procedure)
		if i.cfg.key != nil {
			var err error
			if k, err = i.cfg.key(ctx, req); err != nil {
				return nil, refuse(i.core.Refused(ctx, rpclock.BadKey(err)))
			}
		}
		name, r := i.core.Name(k, req.Header().Values)
		if r != nil {
			return nil, refuse(i.core.Refused(ctx, r))
		}
		var resp connect.AnyResponse
		err := i.core.Do(ctx, name, i.core.Group(spec.Procedure), func(hctx context.Context) error {
			var err error
			resp, err = next(hctx, req)
			return err
		})
		if r, ok := err.(*rpclock.Refusal); ok {
			return nil, refuse(r)
		}
		return resp, err
	}
}

// WrapStreamingClient passes a client's streams through.
func (i *Interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler locks the streaming calls (client-, server- and
// bidi-streaming) a handler serves, with WrapUnary's waiting and answers.
// The key comes from the spec and the request headers ([WithStreamKey],
// [WithHeaderKey]), so the lock is taken before the handler runs, and the
// handler's context is the hold context. A stream whose lock is lost has
// its context cancelled with cause [lockmw.ErrLockLost]; the messages it
// sent before are delivered, its later Send and Receive return
// [connect.CodeAborted], and the call ends [connect.CodeAborted] whatever
// the handler returns. The lock is released when the handler returns or
// panics.
func (i *Interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		spec := conn.Spec()
		k := rpclock.MethodKey(spec.Procedure)
		if i.cfg.streamKey != nil {
			var err error
			if k, err = i.cfg.streamKey(ctx, spec, conn.RequestHeader()); err != nil {
				return refuse(i.core.Refused(ctx, rpclock.BadKey(err)))
			}
		}
		name, r := i.core.Name(k, conn.RequestHeader().Values)
		if r != nil {
			return refuse(i.core.Refused(ctx, r))
		}
		err := i.core.Do(ctx, name, i.core.Group(spec.Procedure), func(hctx context.Context) error {
			return next(hctx, &heldConn{StreamingHandlerConn: conn, hold: hctx})
		})
		if r, ok := err.(*rpclock.Refusal); ok {
			return refuse(r)
		}
		return err
	}
}

// heldConn is a stream under its lock: once the lock is lost, Send and
// Receive refuse.
type heldConn struct {
	connect.StreamingHandlerConn
	hold context.Context
}

func (c *heldConn) Send(m any) error {
	if r := rpclock.Lost(c.hold); r != nil {
		return refuse(r)
	}
	return c.StreamingHandlerConn.Send(m)
}

func (c *heldConn) Receive(m any) error {
	if r := rpclock.Lost(c.hold); r != nil {
		return refuse(r)
	}
	return c.StreamingHandlerConn.Receive(m)
}

// refuse is r as a connect error; a busy answer gets its retry delay as an
// errdetails.RetryInfo detail and as grpc-retry-pushback-ms in the error's
// metadata.
func refuse(r *rpclock.Refusal) error {
	e := connect.NewError(connect.Code(r.Code), r)
	if r.RetryAfter > 0 {
		if d, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.RetryAfter)}); err == nil {
			e.AddDetail(d)
		}
		e.Meta().Set(rpclock.PushbackHeader, r.Pushback())
	}
	return e
}
