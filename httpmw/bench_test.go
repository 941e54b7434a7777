package httpmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// The cost the middleware adds to a request whose lock is free: one acquire
// and one release script on a local redis-server, no HTTP transport.
func BenchmarkWrapUncontended(b *testing.B) {
	srv := redistest.Start(b)
	locks := lockmw.New(srv.NewClient())
	defer locks.Close()
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"without middleware", noop},
		{"per route", httpmw.New(locks).Wrap(noop)},
		{"per resource", httpmw.New(locks, httpmw.WithPathValues("id")).Wrap(noop)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mux := http.NewServeMux()
			mux.Handle("POST /orders/{id}", bc.h)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, httptest.NewRequest("POST", "/orders/1", nil))
				if w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
