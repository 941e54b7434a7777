package grpcmw_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestEachCallNotRunIsReportedAsASkip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hooks, events := locktest.Skips()
	locks := locktest.NewOn(t, srv, hooks)

	t.Run("a busy unary call is a busy skip of the method's lock, adapter grpc", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, "rpc:"+callMethod, 0)
		defer release()
		i := grpcmw.New(locks, grpcmw.WithWait(0))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipBusy, ev.Reason)
		assert.Equal(t, lockmw.AdapterGRPC, ev.Adapter)
		assert.Equal(t, "rpc:"+callMethod, ev.Name)
		assert.Equal(t, "rpc:"+callMethod, ev.Group)
		assert.ErrorIs(t, ev.Err, lockmw.ErrNotAcquired)
	})
	t.Run("a busy stream is a busy skip too", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, "rpc:"+watchMethod, 0)
		defer release()
		i := grpcmw.New(locks, grpcmw.WithWait(0))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := streamCall(t.Context(), cc, streamKinds[0].desc, watchMethod, "x")
		require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipBusy, ev.Reason)
		assert.Equal(t, lockmw.AdapterGRPC, ev.Adapter)
		assert.Equal(t, "rpc:"+watchMethod, ev.Name)
	})
	t.Run("a key function's error is a refused skip that names no lock", func(t *testing.T) {
		bad := errors.New("no order id")
		i := grpcmw.New(locks, grpcmw.WithKey(func(context.Context, string, any) (string, error) { return "", bad }))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.LockInfo{Adapter: lockmw.AdapterGRPC}, ev.LockInfo)
		assert.ErrorIs(t, ev.Err, bad)
	})
	t.Run("a missing metadata value is a refused skip that names no lock", func(t *testing.T) {
		i := grpcmw.New(locks, grpcmw.WithMetadataKey("x-tenant"))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.LockInfo{Adapter: lockmw.AdapterGRPC}, ev.LockInfo)
	})
	require.Empty(t, events)
}
