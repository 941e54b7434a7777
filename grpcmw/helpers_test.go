package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

func TestMain(m *testing.M) {
	// go-redis retries a failed dial in a goroutine that sleeps a second
	// before it sees its pool closed: not ours, and it ends by itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// patience bounds every wait for something that should happen soon.
const patience = 5 * time.Second

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
func serve(t *testing.T, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
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

// queued is the number of waiters in the lock's queue, the sorted set
// rlock_queue:{name} described in lockmw's package documentation.
func queued(t *testing.T, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	key := "rlock_queue:{" + name + "}"
	if strings.Contains(name, "{") {
		key = "rlock_queue:" + name + "~"
	}
	n, err := rdb.ZCard(context.Background(), key).Result()
	require.NoError(t, err)
	return n
}

// holdLock takes name on a Client of its own, as another server would,
// with lease (0: the watchdog), until release.
func holdLock(t *testing.T, srv *redistest.Server, name string, lease time.Duration) (release func()) {
	t.Helper()
	mu := locktest.NewOn(t, srv).Mutex(name)
	hctx, err := mu.TryLock(context.Background(), 0, lease)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = mu.Unlock(hctx) }) }
	t.Cleanup(release)
	return release
}

// gauge records how many handlers run at once.
type gauge struct {
	mu           sync.Mutex
	in, max, all int
}

func (g *gauge) work(ctx context.Context, _ string) error {
	g.mu.Lock()
	g.in++
	g.all++
	g.max = max(g.max, g.in)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.in--
		g.mu.Unlock()
	}()
	time.Sleep(2 * time.Millisecond) // the work: long enough for overlaps to show
	return ctx.Err()
}

// barrier returns work that succeeds only when parties calls are inside it
// at once, and fails when they are not within patience.
func barrier(parties int) func(context.Context, string) error {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return func(ctx context.Context, _ string) error {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(patience):
			return errors.New("alone: no overlap")
		}
	}
}

// blocker is work that signals entered and blocks until release is closed
// or its context ends.
type blocker struct {
	entered chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocker) work(ctx context.Context, v string) error {
	b.entered <- v
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
