package httpmw_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestReadWriteKey(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithReadWrite())
	mp := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithReadWrite(), httpmw.WithPathValues("id"))
	mk := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithReadWrite(),
		httpmw.WithKey(func(r *http.Request) string { return "doc" }))
	tests := []struct {
		name    string
		m       *httpmw.Middleware
		method  string
		pattern string
		want    string
	}{
		{"a read leaves the method out", m, "GET", "GET /docs/{id}", "http:rw:/docs/{id}"},
		{"so does a write: both meet on one lock", m, "PUT", "PUT /docs/{id}", "http:rw:/docs/{id}"},
		{"a method-less pattern", m, "DELETE", "/docs/{id}", "http:rw:/docs/{id}"},
		{"a host stays", m, "GET", "GET example.com/docs", "http:rw:example.com/docs"},
		{"per resource with path values", mp, "PATCH", "PATCH /docs/{id}", "http:rw:/docs/{id}#id=7"},
		{"a WithKey name gets the infix", mk, "GET", "GET /docs/{id}", "rw:doc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/docs/7", nil)
			r.Pattern = tt.pattern
			r.SetPathValue("id", "7")
			assert.Equal(t, tt.want, tt.m.Key(r))
		})
	}
}

// Reads of one resource run together: two GETs meet inside the handler.
func TestReadWriteReadsShare(t *testing.T) {
	t.Parallel()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithReadWrite())
	b := routertest.NewBarrier(2)
	mux := http.NewServeMux()
	mux.Handle("GET /docs/{id}", m.Wrap(b))
	mux.Handle("HEAD /docs/{id}", m.Wrap(b))
	s := routertest.Serve(t, mux)
	for _, ch := range []<-chan routertest.Reply{routertest.SendAsync(t.Context(), s, "GET", "/docs/1"), routertest.SendAsync(t.Context(), s, "HEAD", "/docs/2")} {
		r := testsupport.Recv(t, ch, routertest.Patience, "reply")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, "a read waited for a read: %s", r.Body)
	}
}

// A write waits for the reads of its resource, and reads wait for a write.
func TestReadWriteWritesExclude(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	m := httpmw.New(locktest.NewOn(t, srv), httpmw.WithReadWrite(), httpmw.WithWait(0))
	g := newGate(4)
	defer g.open()
	mux := http.NewServeMux()
	mux.Handle("GET /docs/{id}", m.Wrap(g))
	mux.Handle("POST /docs/{id}", m.Wrap(g))
	s := routertest.Serve(t, mux)

	read := routertest.SendAsync(t.Context(), s, "GET", "/docs/1")
	testsupport.Recv(t, g.entered, routertest.Patience, "the read inside")
	r := routertest.Send(t.Context(), s, "POST", "/docs/1")
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusConflict, r.Status, "a write ran beside a read: %s", r.Body)
	g.open()
	r = testsupport.Recv(t, read, routertest.Patience, "the read's reply")
	assert.Equal(t, http.StatusOK, r.Status, r.Body)

	// A write held elsewhere (another instance, the same name) keeps reads out.
	rw := locktest.NewOn(t, srv).RWMutex("http:rw:/docs/{id}")
	hold, err := rw.TryLock(context.Background(), 0, 0)
	require.NoError(t, err)
	r = routertest.Send(t.Context(), s, "GET", "/docs/1")
	assert.Equal(t, http.StatusConflict, r.Status, "a read ran beside a write: %s", r.Body)
	require.NoError(t, rw.Unlock(hold))
	r = routertest.Send(t.Context(), s, "GET", "/docs/1")
	assert.Equal(t, http.StatusOK, r.Status, r.Body)
}

// A nested Wrap of one key: a write may read; a read that reaches a write
// of its own lock is refused with 500 and a log line, not left waiting for
// itself.
func TestReadWriteNested(t *testing.T) {
	t.Parallel()
	var logs testsupport.LogBuffer
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), httpmw.WithReadWrite(),
		httpmw.WithKey(func(*http.Request) string { return "doc" }),
		httpmw.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ran := 0
	inner := m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
	outer := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The inner request is a write when the outer is a read, and the reverse.
		method := http.MethodGet
		if r.Method == http.MethodGet {
			method = http.MethodPost
		}
		in := r.Clone(r.Context())
		in.Method = method
		inner.ServeHTTP(w, in)
	}))
	s := routertest.Serve(t, outer)

	r := routertest.Send(t.Context(), s, "POST", "/")
	assert.Equal(t, http.StatusOK, r.Status, "a write could not read: %s", r.Body)
	assert.Equal(t, 1, ran)
	r = routertest.Send(t.Context(), s, "GET", "/")
	assert.Equal(t, http.StatusInternalServerError, r.Status, r.Body)
	assert.Equal(t, 1, ran, "a read wrote")
	assert.Contains(t, logs.String(), "nested Wrap")
}

func TestReadWriteWithPermitsPanics(t *testing.T) {
	t.Parallel()
	c := locktest.NewOn(t, redistest.Start(t))
	assert.PanicsWithValue(t, "httpmw: WithReadWrite with WithPermits(3): a read-write lock has no permits", func() {
		httpmw.New(c, httpmw.WithReadWrite(), httpmw.WithPermits(3))
	})
	assert.NotPanics(t, func() { httpmw.New(c, httpmw.WithReadWrite(), httpmw.WithPermits(1)) })
}

// WithReadWrite on a quorum lockmw.Client (three masters, go-redis default
// options): two reads share, a write beside a read is busy (409), and a
// write held by another quorum Client keeps reads out. Two reads' releases
// may each be decided by a different majority of the masters, so the write
// tries until both landed on every master.
func TestReadWriteOnAQuorum(t *testing.T) {
	t.Parallel()
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		rdbs[i] = redistest.Start(t).NewClient()
	}
	locks, other := lockmw.NewQuorum(rdbs), lockmw.NewQuorum(rdbs)
	t.Cleanup(func() { _ = locks.Close(); _ = other.Close() })
	m := httpmw.New(locks, httpmw.WithReadWrite(), httpmw.WithWait(0))
	g := newGate(4)
	defer g.open()
	mux := http.NewServeMux()
	mux.Handle("GET /docs/{id}", m.Wrap(g))
	mux.Handle("POST /docs/{id}", m.Wrap(g))
	s := routertest.Serve(t, mux)

	reads := []<-chan routertest.Reply{routertest.SendAsync(t.Context(), s, "GET", "/docs/1"), routertest.SendAsync(t.Context(), s, "GET", "/docs/2")}
	testsupport.Recv(t, g.entered, routertest.Patience, "a read inside")
	testsupport.Recv(t, g.entered, routertest.Patience, "a second read inside, beside the first")
	r := routertest.Send(t.Context(), s, "POST", "/docs/1")
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusConflict, r.Status, "a write ran beside the reads: %s", r.Body)
	g.open()
	for _, ch := range reads {
		r = testsupport.Recv(t, ch, routertest.Patience, "a read's reply")
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}

	// Each read's Unlock returned once a majority of the masters released
	// it, and the two majorities may differ: until the third master's
	// release lands, in the background and moments later, a write that does
	// not wait may find a read on two masters (busy).
	rw := other.RWMutex("http:rw:/docs/{id}")
	var hold context.Context
	testsupport.Eventually(t, routertest.Patience, "a write taken once the reads' releases landed", func() bool {
		h, err := rw.TryLock(t.Context(), 0, 0)
		if errors.Is(err, lockmw.ErrNotAcquired) {
			return false
		}
		require.NoError(t, err)
		hold = h
		return true
	})
	r = routertest.Send(t.Context(), s, "GET", "/docs/1")
	assert.Equal(t, http.StatusConflict, r.Status, "a read ran beside a write: %s", r.Body)
	require.NoError(t, rw.Unlock(hold))
	r = routertest.Send(t.Context(), s, "GET", "/docs/1")
	assert.Equal(t, http.StatusOK, r.Status, r.Body)
}
