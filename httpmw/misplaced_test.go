package httpmw_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
		var log syncBuffer
		m := httpmw.New(locks, httpmw.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		mux := http.NewServeMux()
		mux.Handle("POST /orders/{id}", h)
		s := startHTTP(t, m.Wrap(mux))
		for range 3 {
			r := send(t.Context(), s, "POST", "/orders/7", nil)
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusInternalServerError, r.status)
			assert.Contains(t, r.body, "see the server log")
		}
		assert.Zero(t, ran.Load(), "the handler ran unlocked")
		assert.Equal(t, 1, strings.Count(log.String(), "\n"), "logged once per Middleware: %s", log.String())
		assert.Contains(t, log.String(), "no route pattern")
		assert.Contains(t, log.String(), "path=/orders/7")
	})

	t.Run("under a mount: a pattern ending in /*", func(t *testing.T) {
		var log syncBuffer
		m := httpmw.New(locks, httpmw.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		mux := http.NewServeMux()
		mux.Handle("/orders/*", m.Wrap(h)) // ServeMux takes "*" literally: the shape chi's mounts give
		s := startHTTP(t, mux)
		r := send(t.Context(), s, "POST", "/orders/*", nil)
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Zero(t, ran.Load(), "the handler ran unlocked")
		assert.Contains(t, log.String(), `pattern=/orders/*`)
	})

	t.Run("a key function is trusted: its empty key runs unlocked", func(t *testing.T) {
		m := httpmw.New(locks, httpmw.WithKey(func(*http.Request) string { return "" }))
		s := startHTTP(t, m.Wrap(h))
		r := send(t.Context(), s, "GET", "/anything", nil)
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
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
	mux.Handle("/orders/{id}", httpmw.New(locks).Wrap(barrier(2)))
	s := startHTTP(t, mux)
	get, post := sendAsync(t.Context(), s, "GET", "/orders/1"), sendAsync(t.Context(), s, "POST", "/orders/1")
	for _, ch := range []<-chan reply{get, post} {
		r := <-ch
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status, r.body)
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
	s = startHTTP(t, mux)
	slow := sendAsync(t.Context(), s, "POST", "/reports")
	<-inside
	assert.Equal(t, http.StatusConflict, send(t.Context(), s, "GET", "/reports", nil).status, "one lock per path")
	close(finish)
	assert.Equal(t, http.StatusOK, (<-slow).status)
}
