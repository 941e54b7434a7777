package grpcmw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// method matches the calls of one full method.
func method(full string) selector.Matcher {
	return selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool { return c.FullMethod() == full })
}

func TestSelectorComposition(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	// Call is locked and does not wait; Other waits for its lock, per
	// x-order-id; Watch is not locked at all.
	calls := grpcmw.New(locks, grpcmw.WithWait(0))
	others := grpcmw.New(locks, grpcmw.WithWait(lockmw.Forever), grpcmw.WithMetadataKey("x-order-id"))
	svc := &service{}
	cc := serve(t, svc.register,
		grpc.ChainUnaryInterceptor(
			selector.UnaryServerInterceptor(calls.Unary(), method(callMethod)),
			selector.UnaryServerInterceptor(others.Unary(), method(otherMethod)),
		),
		grpc.ChainStreamInterceptor(selector.StreamServerInterceptor(calls.Stream(), method(chatMethod))),
	)
	for _, name := range []string{"rpc:" + callMethod, "rpc:" + watchMethod, "rpc:" + chatMethod} {
		release := rpctest.HoldLock(t, srv, name, 0)
		defer release()
	}

	_, err := call(t.Context(), cc, callMethod, "x")
	assert.Equal(t, codes.Aborted, status.Code(err), "Call is locked: %v", err)
	_, err = call(t.Context(), cc, otherMethod, "x")
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "Other is locked per x-order-id: %v", err)
	got, err := streamCall(t.Context(), cc, streamKinds[0].desc, watchMethod, "x")
	require.NoError(t, err, "Watch is not locked")
	assert.Equal(t, []string{"ok:x", "ok:x"}, got)
	_, err = streamCall(t.Context(), cc, streamKinds[2].desc, chatMethod, "x")
	assert.Equal(t, codes.Aborted, status.Code(err), "Chat is locked: %v", err)
}

func TestTracing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	locks := locktest.NewOn(t, srv, lockmw.WithHooks(otelhooks.New(otelhooks.WithTracerProvider(tp))))
	i := grpcmw.New(locks)
	work := make(chan trace.SpanContext, 1)
	cc := serveLocked(t, &service{work: func(ctx context.Context, _ string) error {
		work <- trace.SpanContextFromContext(ctx)
		return nil
	}}, i.Unary(), i.Stream(), grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))))

	_, err := call(t.Context(), cc, callMethod, "x")
	require.NoError(t, err)
	inHandler := testsupport.Recv(t, work, patience, "the handler")
	var spans map[string]sdktrace.ReadOnlySpan
	testsupport.Eventually(t, patience, "the call's server span ended", func() bool {
		spans = map[string]sdktrace.ReadOnlySpan{}
		for _, s := range sr.Ended() {
			spans[s.Name()] = s
		}
		_, ok := spans[strings.TrimPrefix(callMethod, "/")]
		return ok
	})
	call := spans[strings.TrimPrefix(callMethod, "/")]
	assert.Equal(t, trace.SpanKindServer, call.SpanKind())
	for _, name := range []string{otelhooks.WaitSpanName, otelhooks.HoldSpanName} {
		s, ok := spans[name]
		require.True(t, ok, "no %s span", name)
		assert.Equal(t, call.SpanContext().SpanID(), s.Parent().SpanID(), "%s is not a child of the call's span", name)
		assert.Equal(t, call.SpanContext().TraceID(), s.SpanContext().TraceID())
	}
	assert.Equal(t, spans[otelhooks.HoldSpanName].SpanContext().SpanID(), inHandler.SpanID(),
		"the handler's context carries the lock.hold span")
}

func TestHealthServiceUnary(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	i := grpcmw.New(locktest.NewOn(t, srv), grpcmw.WithWait(0))
	cc := serve(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) },
		grpc.ChainUnaryInterceptor(i.Unary()))
	client := healthpb.NewHealthClient(cc)
	resp, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())

	release := rpctest.HoldLock(t, srv, "rpc:/grpc.health.v1.Health/Check", 0)
	defer release()
	_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
}

func TestGivingUpWhileWaitingLeavesTheQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	i := grpcmw.New(locks, grpcmw.WithWait(lockmw.Forever))
	ran := make(chan struct{}, 4)
	cc := serveLocked(t, &service{work: func(context.Context, string) error { ran <- struct{}{}; return nil }}, i.Unary(), i.Stream())
	for _, k := range []struct {
		name, method string
		call         func(ctx context.Context) error
	}{
		{"unary", callMethod, func(ctx context.Context) error { _, err := call(ctx, cc, callMethod, "x"); return err }},
		{"stream", chatMethod, func(ctx context.Context) error {
			_, err := streamCall(ctx, cc, streamKinds[2].desc, chatMethod, "x")
			return err
		}},
	} {
		t.Run(k.name, func(t *testing.T) {
			name := "rpc:" + k.method
			release := rpctest.HoldLock(t, srv, name, 0)
			ctx, cancel := context.WithCancel(t.Context())
			errs := make(chan error, 1)
			go func() { errs <- k.call(ctx) }()
			testsupport.Eventually(t, patience, "the call queued", func() bool { return rpctest.Queued(t, locks.Redis(), name) == 1 })
			cancel()
			assert.Equal(t, codes.Canceled, status.Code(testsupport.Recv(t, errs, patience, "the call")))
			// The server sees the cancel at once; lockmw leaves the queue
			// in the background, before any hand-off could reach it.
			testsupport.Eventually(t, patience, "the waiter leaving the queue", func() bool { return rpctest.Queued(t, locks.Redis(), name) == 0 })
			release()
			assert.Empty(t, ran, "the handler ran for a client that left")
		})
	}
}

func TestAPanicInTheHandlerReleasesTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	i := grpcmw.New(locktest.NewOn(t, srv), grpcmw.WithWait(0))
	svc := &service{work: func(context.Context, string) error { panic("boom") }}
	cc := serve(t, svc.register,
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(), i.Unary()),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(), i.Stream()))
	for range 2 { // the second finds the lock free again, or it would be Aborted
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.Unknown, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), "boom")
		_, err = streamCall(t.Context(), cc, streamKinds[2].desc, chatMethod, "x")
		assert.Equal(t, codes.Unknown, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), "boom")
	}
}
