package httpmw_test

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// A Wrap mounted where no route is known refuses every request with 500
// and logs once, instead of running the handler unlocked (as it did before
// the misplaced check: a whole router behind one Wrap ran with no lock).
func TestMisplacedWrapIsRefusedLoudly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	var ran atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })

	t.Run("around a whole router: no pattern", func(t *testing.T) {
		var log testsupport.LogBuffer
		m := httpmw.New(locks, httpmw.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		mux := http.NewServeMux()
		mux.Handle("POST /orders/{id}", h)
		s := routertest.Serve(t, m.Wrap(mux))
		for range 3 {
			r := routertest.Send(t.Context(), s, "POST", "/orders/7")
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusInternalServerError, r.Status)
			assert.Contains(t, r.Body, "see the server log")
		}
		assert.Zero(t, ran.Load(), "the handler ran unlocked")
		assert.Equal(t, 1, strings.Count(log.String(), "\n"), "logged once per Middleware: %s", log.String())
		assert.Contains(t, log.String(), "no route pattern")
		assert.Contains(t, log.String(), "path=/orders/7")
	})

	t.Run("under a mount: a pattern ending in /*", func(t *testing.T) {
		var log testsupport.LogBuffer
		m := httpmw.New(locks, httpmw.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		mux := http.NewServeMux()
		mux.Handle("/orders/*", m.Wrap(h)) // ServeMux takes "*" literally: the shape chi's mounts give
		s := routertest.Serve(t, mux)
		r := routertest.Send(t.Context(), s, "POST", "/orders/*")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusInternalServerError, r.Status)
		assert.Zero(t, ran.Load(), "the handler ran unlocked")
		assert.Contains(t, log.String(), `pattern=/orders/*`)
	})

	t.Run("a key function is trusted: its empty key runs unlocked", func(t *testing.T) {
		m := httpmw.New(locks, httpmw.WithKey(func(*http.Request) string { return "" }))
		s := routertest.Serve(t, m.Wrap(h))
		r := routertest.Send(t.Context(), s, "GET", "/anything")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status)
		assert.EqualValues(t, 1, ran.Load())
	})
}

// A pattern that names no method locks per method: GET and POST of it run
// at once (each waits inside for the other), unless WithOneLockPerPath.
func TestAPatternWithoutMethodLocksPerMethod(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	mux := http.NewServeMux()
	mux.Handle("/orders/{id}", httpmw.New(locks).Wrap(routertest.NewBarrier(2)))
	s := routertest.Serve(t, mux)
	get, post := routertest.SendAsync(t.Context(), s, "GET", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/1")
	for _, ch := range []<-chan routertest.Reply{get, post} {
		r := <-ch
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}

	shared := httpmw.New(locks, httpmw.WithOneLockPerPath(), httpmw.WithWait(0))
	mux = http.NewServeMux()
	inside, finish := make(chan struct{}), make(chan struct{})
	mux.Handle("/reports", shared.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			close(inside)
			<-finish
		}
	})))
	s = routertest.Serve(t, mux)
	slow := routertest.SendAsync(t.Context(), s, "POST", "/reports")
	<-inside
	assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "GET", "/reports").Status, "one lock per path")
	close(finish)
	assert.Equal(t, http.StatusOK, (<-slow).Status)
}
