package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/connectmw"
	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

// blockingHealth is a grpc-go health service whose Check blocks in b.
type blockingHealth struct {
	healthpb.UnimplementedHealthServer
	b *rpctest.Blocker
}

func (h blockingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := h.b.Work(ctx, "grpc-go"); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// blockingChecker is a grpchealth Checker whose Check blocks in b.
type blockingChecker struct{ b *rpctest.Blocker }

func (c blockingChecker) Check(ctx context.Context, _ *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if err := c.b.Work(ctx, "connect-go"); err != nil {
		return nil, err
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// TestConnectAndGRPCGoExcludeEachOther serves the health service with
// grpc-go under grpcmw and with connect-go under connectmw, on Clients of
// one redis-server: a Check running on either server makes the other's
// answer Aborted, under the default key and under a per-tenant key
// (grpcmw.WithMetadataKey and connectmw.WithHeaderKey name alike).
func TestConnectAndGRPCGoExcludeEachOther(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		g      []grpcmw.Option
		c      []connectmw.Option
		tenant bool
	}{
		{"default key", nil, nil, false},
		{"per tenant", []grpcmw.Option{grpcmw.WithMetadataKey("x-tenant")}, []connectmw.Option{connectmw.WithHeaderKey("X-Tenant")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := rpctest.NewBlocker()
			grpcCheck := serveGRPC(t, b, grpcmw.New(locktest.NewOn(t, srv), append(tc.g, grpcmw.WithWait(0))...))
			connectCheck := serveConnect(t, b, connectmw.New(locktest.NewOn(t, srv), append(tc.c, connectmw.WithWait(0))...))
			tenant := func(ctx context.Context, id string) context.Context {
				if !tc.tenant {
					return ctx
				}
				return metadata.AppendToOutgoingContext(ctx, "x-tenant", id)
			}
			for _, first := range []struct {
				name         string
				holder, peer func(ctx context.Context) codes.Code
			}{
				{"grpc-go holds", grpcCheck, connectCheck},
				{"connect-go holds", connectCheck, grpcCheck},
			} {
				done := make(chan codes.Code, 1)
				go func() { done <- first.holder(tenant(t.Context(), "acme")) }()
				testsupport.Recv(t, b.Entered, rpctest.Patience, first.name)
				assert.Equal(t, codes.Aborted, first.peer(tenant(t.Context(), "acme")), "%s: the other server's Check", first.name)
				if tc.tenant {
					// Another tenant's Check runs beside it.
					other := make(chan codes.Code, 1)
					go func() { other <- first.peer(tenant(t.Context(), "globex")) }()
					testsupport.Recv(t, b.Entered, rpctest.Patience, first.name+": another tenant's Check")
					b.Release <- struct{}{} // one of the two
					b.Release <- struct{}{} // the other
					assert.Equal(t, codes.OK, testsupport.Recv(t, other, rpctest.Patience, "another tenant's Check"))
				} else {
					b.Release <- struct{}{}
				}
				assert.Equal(t, codes.OK, testsupport.Recv(t, done, rpctest.Patience, first.name))
			}
		})
	}
}

// serveGRPC serves blockingHealth with grpc-go under i; its Check returns
// the call's code.
func serveGRPC(t *testing.T, b *rpctest.Blocker, i *grpcmw.Interceptor) func(context.Context) codes.Code {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(i.Unary()))
	healthpb.RegisterHealthServer(s, blockingHealth{b: b})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cc.Close()
		s.Stop()
		<-served
	})
	client := healthpb.NewHealthClient(cc)
	return func(ctx context.Context) codes.Code {
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return status.Code(err)
	}
}

// serveConnect serves blockingChecker with connect-go under i, over h2c;
// its Check (gRPC protocol) returns the call's code, and passes on the
// outgoing metadata of ctx as headers.
func serveConnect(t *testing.T, b *rpctest.Blocker, i *connectmw.Interceptor) func(context.Context) codes.Code {
	mux := http.NewServeMux()
	mux.Handle(grpchealth.NewHandler(blockingChecker{b: b}, connect.WithInterceptors(i)))
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: mux, Protocols: &p}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	hc := &http.Client{Transport: &http.Transport{Protocols: &p}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		_ = s.Close()
		<-served
	})
	check := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](hc,
		"http://"+lis.Addr().String()+"/grpc.health.v1.Health/Check", connect.WithGRPC())
	return func(ctx context.Context) codes.Code {
		req := connect.NewRequest(&healthpb.HealthCheckRequest{})
		md, _ := metadata.FromOutgoingContext(ctx)
		for k, vs := range md {
			for _, v := range vs {
				req.Header().Add(k, v)
			}
		}
		if _, err := check.CallUnary(ctx, req); err != nil {
			return codes.Code(connect.CodeOf(err))
		}
		return codes.OK
	}
}
