package grpcmw_test

import (
	"context"
	"fmt"
	"net"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// A server whose health checks run one at a time across the fleet, the
// lock named "rpc:/grpc.health.v1.Health/Check"; a Check while another
// server holds that lock is answered Aborted.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	i := grpcmw.New(locks, grpcmw.WithWait(0))
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(i.Unary()), grpc.ChainStreamInterceptor(i.Stream()))
	healthpb.RegisterHealthServer(s, health.NewServer())
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(lis)
	defer s.Stop()

	cc, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	ctx := context.Background()
	resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)

	other := locks.Mutex("rpc:/grpc.health.v1.Health/Check") // as another server's call
	hold, _ := other.Lock(ctx)
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err))
	_ = other.Unlock(hold)
	// Output:
	// SERVING <nil>
	// Aborted
}

// Only some methods locked, each with its own settings: one Interceptor per
// setting, each under go-grpc-middleware's selector.
func Example_selector() {
	var locks *lockmw.Client = exampleClient()                        // your Client
	reports := grpcmw.New(locks, grpcmw.WithWait(0))                  // one report at a time, no waiting
	orders := grpcmw.New(locks, grpcmw.WithMetadataKey("x-order-id")) // one call per order
	exports := grpcmw.New(locks, grpcmw.WithPermits(3))               // three exports at once
	is := func(method string) selector.Matcher {
		return selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool { return c.FullMethod() == method })
	}
	_ = grpc.NewServer(
		grpc.ChainUnaryInterceptor(
			selector.UnaryServerInterceptor(reports.Unary(), is("/shop.Reports/Build")),
			selector.UnaryServerInterceptor(orders.Unary(), selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
				return c.Service == "shop.Orders"
			})),
		),
		grpc.ChainStreamInterceptor(selector.StreamServerInterceptor(exports.Stream(), is("/shop.Exports/Stream"))),
	)
}

// exampleClient is a Client on a Redis that nobody runs: Example_selector
// only builds a server.
func exampleClient() *lockmw.Client {
	return lockmw.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
}
