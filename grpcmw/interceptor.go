package grpcmw

import (
	"context"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/go-rlock/rlock/internal/rpclock"
	"github.com/go-rlock/rlock/lockmw"
)

// Interceptor runs the calls that share a lock key one at a time (or at
// most [WithPermits] at once) across every server whose Interceptors use
// lockmw Clients on the same Redis. It is configured once by [New] and safe
// for concurrent use; [Interceptor.Unary] and [Interceptor.Stream] share
// its configuration.
type Interceptor struct {
	cfg  config
	core *rpclock.Core
}

// New returns an Interceptor that takes its locks through c. It panics when
// c is nil, an option is nil or an option's value is invalid (see
// [Option]): that is configuration that can never be right.
func New(c *lockmw.Client, opts ...Option) *Interceptor {
	if c == nil {
		panic("grpcmw: New(nil): a lockmw.Client is required")
	}
	cfg := newConfig(opts)
	return &Interceptor{cfg: cfg, core: rpclock.New(c, cfg.Settings, lockmw.AdapterGRPC)}
}

// Unary returns the interceptor of unary calls:
//
//	grpc.NewServer(grpc.ChainUnaryInterceptor(i.Unary()), grpc.ChainStreamInterceptor(i.Stream()))
//
// Each call computes its key (see [WithKey], [WithMetadataKey]) and waits
// for its lock (see [WithWait]), then:
//
//   - it got the lock: the handler runs with the hold context, which is
//     cancelled with cause [lockmw.ErrLockLost] when the lock is lost; the
//     lock is released when the handler returns or panics (the panic goes
//     on). When the lock was lost meanwhile the call ends [codes.Aborted],
//     also when the handler returned nil: another call may have run beside
//     it. A nested call with the hold context on the same Client and name
//     re-enters.
//   - the lock stayed busy: [codes.Aborted] with an [errdetails.RetryInfo]
//     detail and the grpc-retry-pushback-ms trailer saying when to come back
//     (the holder's remaining lease under [WithLease], the remaining TTL of
//     the first permit to expire under [WithPermits], else
//     [DefaultRetryAfter]).
//   - the call's deadline passed, or the client cancelled, while it waited:
//     [codes.DeadlineExceeded] or [codes.Canceled].
//   - the key function failed, or the name cannot be a lock's:
//     [codes.InvalidArgument].
//   - Redis failed or the Client was closed: [codes.Unavailable].
//
// Messages never include Redis errors; the Client's [lockmw.Hooks] (for
// example otelhooks) see every failed acquisition. Each call refused before
// its handler ran is reported to the Client's Skip hooks
// ([lockmw.Hooks.Skip]; otelhooks counts it in lock.skips, with
// lock.adapter grpc): reason busy (also when the call's context ended
// during a busy wait), refused (the key) or error; the code is the
// outcome an outer interceptor sees. Every lock's events carry lock.adapter
// grpc ([lockmw.WithAdapter]).
func (i *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		name, r := i.name(ctx, info.FullMethod, req)
		if r != nil {
			return nil, refuse(r, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) })
		}
		var resp any
		err := i.core.Do(ctx, name, i.core.Group(info.FullMethod), func(hctx context.Context) error {
			var err error
			resp, err = handler(hctx, req)
			return err
		})
		if r, ok := err.(*rpclock.Refusal); ok {
			return nil, refuse(r, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) })
		}
		return resp, err
	}
}

// name is the name of the lock of a call of method with req (see WithKey),
// "" for none.
func (i *Interceptor) name(ctx context.Context, method string, req any) (string, *rpclock.Refusal) {
	k := rpclock.MethodKey(method)
	if i.cfg.key != nil {
		var err error
		if k, err = i.cfg.key(ctx, method, req); err != nil {
			return "", i.core.Refused(ctx, rpclock.BadKey(err))
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	name, r := i.core.Name(k, md.Get)
	if r != nil {
		return "", i.core.Refused(ctx, r)
	}
	return name, nil
}

// refuse is r as a status error; a busy answer gets its retry delay as an
// errdetails.RetryInfo detail and, through setTrailer, as the
// grpc-retry-pushback-ms trailer.
func refuse(r *rpclock.Refusal, setTrailer func(metadata.MD)) error {
	st := status.New(codes.Code(r.Code), r.Msg)
	if r.RetryAfter > 0 {
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.RetryAfter)}); err == nil {
			st = d
		}
		setTrailer(metadata.Pairs(rpclock.PushbackHeader, r.Pushback()))
	}
	return st.Err()
}
