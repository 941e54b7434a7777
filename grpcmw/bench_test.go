package grpcmw_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// The cost the interceptor adds to a unary call whose lock is free: one
// acquisition and one release on a local redis-server, beside a call over
// a loopback grpc connection.
func BenchmarkUnaryUncontended(b *testing.B) {
	srv := redistest.Start(b)
	locks := lockmw.New(srv.NewClient())
	defer locks.Close()
	pass := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	for _, bc := range []struct {
		name string
		i    grpc.UnaryServerInterceptor
	}{
		{"without interceptor", pass},
		{"per method", grpcmw.New(locks).Unary()},
		{"per metadata value", grpcmw.New(locks, grpcmw.WithMetadataKey("x-order-id")).Unary()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			svc := &service{}
			cc := serve(b, svc.register, grpc.ChainUnaryInterceptor(bc.i))
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-order-id", "7")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := call(ctx, cc, callMethod, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
