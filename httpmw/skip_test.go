package httpmw_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestEachRequestNotRunIsReportedAsASkip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hooks, events := locktest.Skips()
	locks, other := locktest.NewOn(t, srv, hooks), locktest.NewOn(t, srv)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	quiet := httpmw.WithLogger(slog.New(slog.DiscardHandler))
	reasons := make(chan error, 100)
	onSkip := httpmw.WithOnSkip(func(_ *http.Request, reason error) { reasons <- reason })
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", httpmw.New(locks, httpmw.WithWait(0), httpmw.WithPathValues("id"), onSkip).Wrap(ok))
	mux.Handle("/misplaced/*", httpmw.New(locks, quiet, onSkip).Wrap(ok))
	s := routertest.Serve(t, mux)

	t.Run("a request that runs is no skip", func(t *testing.T) {
		r := routertest.Send(t.Context(), s, "POST", "/orders/1")
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusOK, r.Status)
		require.Empty(t, events)
		require.Empty(t, reasons)
	})
	t.Run("a busy lock is a busy skip of the route's lock, adapter http", func(t *testing.T) {
		release := locktest.Hold(t, other, "http:POST /orders/{id}#id=2", 0)
		defer release()
		r := routertest.Send(t.Context(), s, "POST", "/orders/2")
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusConflict, r.Status)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipBusy, ev.Reason)
		assert.Equal(t, lockmw.AdapterHTTP, ev.Adapter)
		assert.Equal(t, "http:POST /orders/{id}#id=2", ev.Name)
		assert.Equal(t, "http:POST /orders/{id}", ev.Group)
		assert.ErrorIs(t, ev.Err, lockmw.ErrNotAcquired)
		assert.ErrorIs(t, testsupport.Recv(t, reasons, 10*time.Second, "WithOnSkip's call"), lockmw.ErrNotAcquired)
	})
	t.Run("a key that cannot name a lock is a refused skip", func(t *testing.T) {
		r := routertest.Send(t.Context(), s, "POST", "/orders/"+strings.Repeat("x", lockmw.MaxNameLen))
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusBadRequest, r.Status)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.AdapterHTTP, ev.Adapter)
		assert.ErrorIs(t, ev.Err, lockmw.ErrInvalidName)
		assert.ErrorIs(t, testsupport.Recv(t, reasons, 10*time.Second, "WithOnSkip's call"), lockmw.ErrInvalidName)
	})
	t.Run("a misplaced Wrap is a refused skip that names no lock", func(t *testing.T) {
		r := routertest.Send(t.Context(), s, "POST", "/misplaced/*")
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusInternalServerError, r.Status)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.LockInfo{Adapter: lockmw.AdapterHTTP}, ev.LockInfo)
		assert.ErrorIs(t, ev.Err, httpmw.ErrMisplaced)
		assert.ErrorIs(t, testsupport.Recv(t, reasons, 10*time.Second, "WithOnSkip's call"), httpmw.ErrMisplaced)
	})
	t.Run("a Redis that is down is an error skip", func(t *testing.T) {
		hooks, events := locktest.Skips()
		mux := http.NewServeMux()
		mux.Handle("GET /down", httpmw.New(locktest.NewDown(t, hooks), httpmw.WithWait(0)).Wrap(ok))
		r := routertest.Send(t.Context(), routertest.Serve(t, mux), "GET", "/down")
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusServiceUnavailable, r.Status)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipFailed, ev.Reason)
		assert.Equal(t, "error", ev.Reason.String())
		assert.Equal(t, lockmw.AdapterHTTP, ev.Adapter)
	})
	require.Empty(t, events)
	require.Empty(t, reasons)
}
