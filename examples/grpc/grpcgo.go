package main

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/lockmw"
)

// health is the grpc-go health service whose Check does the journal's work.
type health struct {
	healthpb.UnimplementedHealthServer
	j *journal
}

func (h *health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := h.j.checkWork(ctx, "grpc-go"); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// startGRPC starts the grpc-go instance on a loopback port.
func startGRPC(locks *lockmw.Client, j *journal) (*instance, error) {
	i := grpcmw.New(locks, grpcmw.WithWait(wait))
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(i.Unary()), grpc.ChainStreamInterceptor(i.Stream()))
	healthpb.RegisterHealthServer(s, &health{j: j})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		return nil, err
	}
	client := healthpb.NewHealthClient(cc)
	return &instance{
		name: "grpc-go",
		check: func(ctx context.Context) error {
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		},
		busy: func(ctx context.Context) string {
			var trailer metadata.MD
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
			st := status.Convert(err)
			for _, d := range st.Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					return fmt.Sprintf("%v, retry in %v (RetryInfo; grpc-retry-pushback-ms %s)",
						st.Code(), ri.GetRetryDelay().AsDuration(), trailer.Get("grpc-retry-pushback-ms")[0])
				}
			}
			return fmt.Sprint(err)
		},
		stop: func() {
			_ = cc.Close()
			s.Stop()
			<-served
		},
	}, nil
}
