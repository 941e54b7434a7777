package connectmw_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/connectmw"
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
	tr := transports(t)[0]

	t.Run("a busy call is a busy skip of the procedure's lock, adapter connect", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, "rpc:"+callProc, 0)
		defer release()
		base := serveLocked(t, &service{}, connectmw.New(locks, connectmw.WithWait(0)))
		_, err := tr.call(t.Context(), base, "x")
		require.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipBusy, ev.Reason)
		assert.Equal(t, lockmw.AdapterConnect, ev.Adapter)
		assert.Equal(t, "rpc:"+callProc, ev.Name)
		assert.ErrorIs(t, ev.Err, lockmw.ErrNotAcquired)
	})
	t.Run("a missing header value is a refused skip that names no lock", func(t *testing.T) {
		base := serveLocked(t, &service{}, connectmw.New(locks, connectmw.WithHeaderKey("x-tenant")))
		_, err := tr.call(t.Context(), base, "x")
		require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
		ev := testsupport.Recv(t, events, patience, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.LockInfo{Adapter: lockmw.AdapterConnect}, ev.LockInfo)
	})
	require.Empty(t, events)
}
