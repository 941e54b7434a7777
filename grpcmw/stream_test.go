package grpcmw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	for _, k := range streamKinds {
		t.Run(k.name+" calls of one method are serialized across servers", func(t *testing.T) {
			b := rpctest.NewBlocker()
			ccs := twoServers(t, srv, &service{work: b.Work}, grpcmw.WithWait(0))
			done := make(chan error, 1)
			go func() { _, err := streamCall(t.Context(), ccs[0], k.desc, k.method, "first"); done <- err }()
			testsupport.Recv(t, b.Entered, patience, "the first stream")
			got, err := streamCall(t.Context(), ccs[1], k.desc, k.method, "second")
			assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
			assert.Empty(t, got)
			retryDelay(t, err)
			close(b.Release)
			require.NoError(t, testsupport.Recv(t, done, patience, "the first stream"))
			got, err = streamCall(t.Context(), ccs[1], k.desc, k.method, "third")
			require.NoError(t, err)
			assert.Contains(t, got, "ok:third")
		})
		t.Run(k.name+" calls lock at the first receive under WithKey", func(t *testing.T) {
			var keys []any
			i := grpcmw.New(locks, grpcmw.WithWait(0), grpcmw.WithKey(func(ctx context.Context, method string, req any) (string, error) {
				keys = append(keys, req)
				if req == nil {
					return "", errors.New("no first message")
				}
				return "order:" + req.(*wrapperspb.StringValue).GetValue(), nil
			}))
			cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
			release := rpctest.HoldLock(t, srv, "order:busy", 0)
			defer release()
			got, err := streamCall(t.Context(), cc, k.desc, k.method, "busy")
			assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
			assert.Empty(t, got)
			got, err = streamCall(t.Context(), cc, k.desc, k.method, "free")
			require.NoError(t, err)
			assert.Contains(t, got, "ok:free")
			require.Len(t, keys, 2)
		})
		t.Run(k.name+" calls end Aborted when the lock is lost", func(t *testing.T) {
			short := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
			l := rpctest.NewLoser()
			i := grpcmw.New(short)
			cc := serveLocked(t, &service{work: l.Work}, i.Unary(), i.Stream())
			type result struct {
				got []string
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := streamCall(t.Context(), cc, k.desc, k.method, "x")
				done <- result{got, err}
			}()
			testsupport.Recv(t, l.Entered, patience, "the handler")
			_, err := locks.Mutex("rpc:" + k.method).ForceUnlock(t.Context())
			require.NoError(t, err)
			assert.ErrorIs(t, testsupport.Recv(t, l.Causes, patience, "the hold context's cause"), lockmw.ErrLockLost)
			r := testsupport.Recv(t, done, patience, "the stream")
			assert.Equal(t, codes.Aborted, status.Code(r.err), "%v", r.err)
			if k.method == watchMethod {
				assert.Equal(t, []string{"ok:x"}, r.got, "what the stream sent before the loss")
			} else {
				assert.Empty(t, r.got, "the send after the loss went out")
			}
		})
	}
	t.Run("a client-streaming call that sends nothing gives the key function nil", func(t *testing.T) {
		i := grpcmw.New(locks, grpcmw.WithKey(func(ctx context.Context, method string, req any) (string, error) {
			if req != nil {
				return "", errors.New("a message?")
			}
			return "", errors.New("no first message")
		}))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		cs, err := cc.NewStream(t.Context(), &grpc.StreamDesc{ClientStreams: true}, uploadMethod)
		require.NoError(t, err)
		require.NoError(t, cs.CloseSend())
		err = cs.RecvMsg(new(wrapperspb.StringValue))
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		assert.Equal(t, "no first message", status.Convert(err).Message())
	})
	t.Run("a handler that sends before its first receive under WithKey is refused", func(t *testing.T) {
		i := grpcmw.New(locks, grpcmw.WithKey(func(context.Context, string, any) (string, error) { return "greet", nil }))
		sent := make(chan error, 1)
		cc := serve(t, func(s *grpc.Server) {
			s.RegisterService(&grpc.ServiceDesc{
				ServiceName: "rlocktest.Greeter",
				HandlerType: (*any)(nil),
				Streams: []grpc.StreamDesc{{StreamName: "Greet", ServerStreams: true, ClientStreams: true,
					Handler: func(_ any, ss grpc.ServerStream) error {
						err := ss.SendMsg(wrapperspb.String("hello"))
						sent <- err
						return nil // and ignores it
					}}},
			}, nil)
		}, grpc.ChainStreamInterceptor(i.Stream()))
		got, err := streamCall(t.Context(), cc, grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/rlocktest.Greeter/Greet", "x")
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
		assert.Empty(t, got)
		assert.Equal(t, codes.Internal, status.Code(testsupport.Recv(t, sent, patience, "the send")))
	})
	t.Run("a send while the first receive waits for the lock is refused", func(t *testing.T) {
		const name = "greet:waiting"
		release := rpctest.HoldLock(t, srv, name, 0)
		// A waiter that misses the hand-off (see twoServers) retries every 1s.
		waiter := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(3*time.Second))
		i := grpcmw.New(waiter, grpcmw.WithWait(lockmw.Forever), grpcmw.WithKey(func(context.Context, string, any) (string, error) { return name, nil }))
		sent, received, handed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		cc := serve(t, func(s *grpc.Server) {
			s.RegisterService(&grpc.ServiceDesc{
				ServiceName: "rlocktest.Greeter",
				HandlerType: (*any)(nil),
				Streams: []grpc.StreamDesc{{StreamName: "Greet", ServerStreams: true, ClientStreams: true,
					Handler: func(_ any, ss grpc.ServerStream) error {
						go func() { received <- ss.RecvMsg(new(wrapperspb.StringValue)) }()
						testsupport.Eventually(t, patience, "the first receive queued", func() bool { return rpctest.Queued(t, srv.Client(), name) == 1 })
						sent <- ss.SendMsg(wrapperspb.String("hello"))
						err := <-received
						handed <- err
						return err
					}}},
			}, nil)
		}, grpc.ChainStreamInterceptor(i.Stream()))
		done := make(chan error, 1)
		go func() {
			_, err := streamCall(t.Context(), cc, grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/rlocktest.Greeter/Greet", "x")
			done <- err
		}()
		assert.Equal(t, codes.Internal, status.Code(testsupport.Recv(t, sent, patience, "the send")))
		release()
		assert.Equal(t, codes.Internal, status.Code(testsupport.Recv(t, handed, patience, "the first receive")))
		err := testsupport.Recv(t, done, patience, "the stream")
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	})
}
