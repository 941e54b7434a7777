package grpcmw_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
)

func TestMain(m *testing.M) {
	// go-redis retries a failed dial in a goroutine that sleeps a second
	// before it sees its pool closed: not ours, and it ends by itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// patience bounds every wait for something that should happen soon.
const patience = rpctest.Patience

// The methods of the test service, rlocktest.Locked, written by hand as a
// grpc.ServiceDesc (no protoc): each carries wrapperspb.StringValue both
// ways.
const (
	callMethod   = "/rlocktest.Locked/Call"
	otherMethod  = "/rlocktest.Locked/Other"
	watchMethod  = "/rlocktest.Locked/Watch"  // server-streaming
	uploadMethod = "/rlocktest.Locked/Upload" // client-streaming
	chatMethod   = "/rlocktest.Locked/Chat"   // bidi-streaming
)

// service serves rlocktest.Locked: every method calls work with the
// handler's context and the request's value (an upload's first), then
// answers "ok:" + value; a stream answers twice (Watch, Upload once).
type service struct {
	work func(ctx context.Context, v string) error
}

func (s *service) do(ctx context.Context, v string) error {
	if s.work == nil {
		return nil
	}
	return s.work(ctx, v)
}

func reply(v string) *wrapperspb.StringValue { return wrapperspb.String("ok:" + v) }

func (s *service) desc() *grpc.ServiceDesc {
	unary := func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor, method string) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			v := req.(*wrapperspb.StringValue).GetValue()
			if err := s.do(ctx, v); err != nil {
				return nil, err
			}
			return reply(v), nil
		}
		if icpt == nil {
			return h(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: method}, h)
	}
	return &grpc.ServiceDesc{
		ServiceName: "rlocktest.Locked",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Call", Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				return unary(srv, ctx, dec, icpt, callMethod)
			}},
			{MethodName: "Other", Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				return unary(srv, ctx, dec, icpt, otherMethod)
			}},
		},
		Streams: []grpc.StreamDesc{
			{StreamName: "Watch", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				in := new(wrapperspb.StringValue)
				if err := ss.RecvMsg(in); err != nil {
					return err
				}
				if err := ss.SendMsg(reply(in.GetValue())); err != nil {
					return err
				}
				if err := s.do(ss.Context(), in.GetValue()); err != nil {
					return err
				}
				return ss.SendMsg(reply(in.GetValue()))
			}},
			{StreamName: "Upload", ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				first := ""
				for n := 0; ; n++ {
					in := new(wrapperspb.StringValue)
					err := ss.RecvMsg(in)
					if err == io.EOF {
						break
					}
					if err != nil {
						return err
					}
					if n == 0 {
						first = in.GetValue()
					}
				}
				if err := s.do(ss.Context(), first); err != nil {
					return err
				}
				return ss.SendMsg(reply(first))
			}},
			{StreamName: "Chat", ServerStreams: true, ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				for {
					in := new(wrapperspb.StringValue)
					err := ss.RecvMsg(in)
					if err == io.EOF {
						return nil
					}
					if err != nil {
						return err
					}
					if err := s.do(ss.Context(), in.GetValue()); err != nil {
						return err
					}
					if err := ss.SendMsg(reply(in.GetValue())); err != nil {
						return err
					}
				}
			}},
		},
	}
}

// serve starts a grpc server on a loopback port with opts and the
// services register adds, stopped at cleanup, and returns a client
// connection to it, closed at cleanup.
func serve(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(opts...)
	register(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cc.Close()
		s.Stop()
		<-done
	})
	return cc
}

// serveLocked serves svc under the interceptor's Unary and Stream.
func serveLocked(t *testing.T, svc *service, unary grpc.UnaryServerInterceptor, stream grpc.StreamServerInterceptor, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	opts = append(opts, grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
	return serve(t, svc.register, opts...)
}

// register registers the service on s.
func (s *service) register(gs *grpc.Server) { gs.RegisterService(s.desc(), s) }

// call makes a unary call of method with value v.
func call(ctx context.Context, cc *grpc.ClientConn, method, v string, opts ...grpc.CallOption) (string, error) {
	out := new(wrapperspb.StringValue)
	err := cc.Invoke(ctx, method, wrapperspb.String(v), out, opts...)
	return out.GetValue(), err
}

// streamKinds are the three streaming methods and how a client drives each
// with one value: send it (and close the sending side), then read every
// answer until the stream ends.
var streamKinds = []struct {
	name, method string
	desc         grpc.StreamDesc
}{
	{"server-streaming", watchMethod, grpc.StreamDesc{ServerStreams: true}},
	{"client-streaming", uploadMethod, grpc.StreamDesc{ClientStreams: true}},
	{"bidi-streaming", chatMethod, grpc.StreamDesc{ServerStreams: true, ClientStreams: true}},
}

// streamCall sends v on a new stream of method and returns the answers
// received before the stream ended, and how it ended (nil for io.EOF).
func streamCall(ctx context.Context, cc *grpc.ClientConn, desc grpc.StreamDesc, method, v string, opts ...grpc.CallOption) ([]string, error) {
	cs, err := cc.NewStream(ctx, &desc, method, opts...)
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(wrapperspb.String(v)); err != nil && err != io.EOF {
		return nil, err
	}
	if err := cs.CloseSend(); err != nil {
		return nil, err
	}
	var got []string
	for {
		out := new(wrapperspb.StringValue)
		err := cs.RecvMsg(out)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, out.GetValue())
	}
}
