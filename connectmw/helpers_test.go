package connectmw_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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

// The procedures of the test service, each carrying wrapperspb.StringValue
// both ways, and grpchealth's Check.
const (
	callProc   = "/rlocktest.Locked/Call"
	watchProc  = "/rlocktest.Locked/Watch"  // server-streaming
	uploadProc = "/rlocktest.Locked/Upload" // client-streaming
	chatProc   = "/rlocktest.Locked/Chat"   // bidi-streaming
	checkProc  = "/grpc.health.v1.Health/Check"
)

type msg = wrapperspb.StringValue

// service serves the test procedures: each calls work with the handler's
// context and the request's value (an upload's first), then answers
// "ok:" + value (Watch twice, sending the first before work).
type service struct {
	work func(ctx context.Context, v string) error
}

func (s *service) do(ctx context.Context, v string) error {
	if s.work == nil {
		return nil
	}
	return s.work(ctx, v)
}

func reply(v string) *msg { return wrapperspb.String("ok:" + v) }

// Check is grpchealth's Checker: SERVING once work returns.
func (s *service) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if err := s.do(ctx, req.Service); err != nil {
		return nil, err
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// mux serves the test service and grpchealth's handler with opts.
func (s *service) mux(opts ...connect.HandlerOption) *http.ServeMux {
	m := http.NewServeMux()
	m.Handle(callProc, connect.NewUnaryHandler(callProc, func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
		if err := s.do(ctx, req.Msg.GetValue()); err != nil {
			return nil, err
		}
		return connect.NewResponse(reply(req.Msg.GetValue())), nil
	}, opts...))
	m.Handle(watchProc, connect.NewServerStreamHandler(watchProc, func(ctx context.Context, req *connect.Request[msg], st *connect.ServerStream[msg]) error {
		v := req.Msg.GetValue()
		if err := st.Send(reply(v)); err != nil {
			return err
		}
		if err := s.do(ctx, v); err != nil {
			return err
		}
		return st.Send(reply(v))
	}, opts...))
	m.Handle(uploadProc, connect.NewClientStreamHandler(uploadProc, func(ctx context.Context, st *connect.ClientStream[msg]) (*connect.Response[msg], error) {
		first := ""
		for n := 0; st.Receive(); n++ {
			if n == 0 {
				first = st.Msg().GetValue()
			}
		}
		if err := st.Err(); err != nil {
			return nil, err
		}
		if err := s.do(ctx, first); err != nil {
			return nil, err
		}
		return connect.NewResponse(reply(first)), nil
	}, opts...))
	m.Handle(chatProc, connect.NewBidiStreamHandler(chatProc, func(ctx context.Context, st *connect.BidiStream[msg, msg]) error {
		for {
			in, err := st.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.do(ctx, in.GetValue()); err != nil {
				return err
			}
			if err := st.Send(reply(in.GetValue())); err != nil {
				return err
			}
		}
	}, opts...))
	path, h := grpchealth.NewHandler(s, opts...)
	m.Handle(path, h)
	return m
}

// serveHTTP serves h on a loopback port over HTTP/1.1 and h2c (HTTP/2
// without TLS), closed at cleanup, and returns its base URL.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: h, Protocols: &p, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		_ = s.Close()
		<-done
	})
	return "http://" + lis.Addr().String()
}

// serveLocked serves svc with the interceptor, and returns its base URL.
func serveLocked(t *testing.T, svc *service, i connect.Interceptor) string {
	t.Helper()
	return serveHTTP(t, svc.mux(connect.WithInterceptors(i)))
}

// transport is how a client reaches a server: an HTTP version and a
// Connect protocol.
type transport struct {
	name   string
	client *http.Client
	opts   []connect.ClientOption
	h2     bool // bidi streams need HTTP/2
}

// transports are HTTP/1.1 with the Connect protocol, and h2c with the
// Connect and the gRPC protocols; their clients' idle connections are
// closed at cleanup.
func transports(t *testing.T) []transport {
	var h1, h2 http.Protocols
	h1.SetHTTP1(true)
	h2.SetUnencryptedHTTP2(true)
	c1 := &http.Client{Transport: &http.Transport{Protocols: &h1}}
	c2 := &http.Client{Transport: &http.Transport{Protocols: &h2}}
	t.Cleanup(c1.CloseIdleConnections)
	t.Cleanup(c2.CloseIdleConnections)
	return []transport{
		{name: "HTTP/1.1 Connect", client: c1},
		{name: "h2c Connect", client: c2, h2: true},
		{name: "h2c gRPC", client: c2, opts: []connect.ClientOption{connect.WithGRPC()}, h2: true},
	}
}

// call makes a unary call of callProc with value v.
func (tr transport) call(ctx context.Context, base, v string, header ...string) (string, error) {
	req := connect.NewRequest(wrapperspb.String(v))
	for k := 0; k+1 < len(header); k += 2 {
		req.Header().Set(header[k], header[k+1])
	}
	resp, err := connect.NewClient[msg, msg](tr.client, base+callProc, tr.opts...).CallUnary(ctx, req)
	if err != nil {
		return "", err
	}
	return resp.Msg.GetValue(), nil
}

// check calls grpchealth's Check.
func (tr transport) check(ctx context.Context, base string) error {
	_, err := grpchealth.NewClient(tr.client, base, tr.opts...).Check(ctx, &grpchealth.CheckRequest{})
	return err
}

// streamKinds are the three streaming procedures; bidi needs HTTP/2.
var streamKinds = []struct {
	name, proc string
	bidi       bool
}{
	{"server-streaming", watchProc, false},
	{"client-streaming", uploadProc, false},
	{"bidi-streaming", chatProc, true},
}

// stream sends v on a new stream of proc (with header's pairs) and returns
// the answers received before it ended, and how it ended.
func (tr transport) stream(ctx context.Context, base, proc, v string, header ...string) ([]string, error) {
	c := connect.NewClient[msg, msg](tr.client, base+proc, tr.opts...)
	set := func(h http.Header) {
		for k := 0; k+1 < len(header); k += 2 {
			h.Set(header[k], header[k+1])
		}
	}
	var got []string
	switch proc {
	case watchProc:
		req := connect.NewRequest(wrapperspb.String(v))
		set(req.Header())
		st, err := c.CallServerStream(ctx, req)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		for st.Receive() {
			got = append(got, st.Msg().GetValue())
		}
		return got, st.Err()
	case uploadProc:
		st := c.CallClientStream(ctx)
		set(st.RequestHeader())
		_ = st.Send(wrapperspb.String(v)) // its error comes from CloseAndReceive
		resp, err := st.CloseAndReceive()
		if err != nil {
			return nil, err
		}
		return []string{resp.Msg.GetValue()}, nil
	default:
		st := c.CallBidiStream(ctx)
		set(st.RequestHeader())
		defer st.CloseResponse()
		_ = st.Send(wrapperspb.String(v))
		if err := st.CloseRequest(); err != nil {
			return nil, err
		}
		for {
			out, err := st.Receive()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got = append(got, out.GetValue())
		}
	}
}

// retryDelay is the RetryInfo detail of a connect error.
func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	for _, d := range ce.Details() {
		v, derr := d.Value()
		require.NoError(t, derr)
		if ri, ok := v.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", err)
	return 0
}
