package ginmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/ginmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// The cost the middleware adds to a request whose lock is free, as
// httpmw's BenchmarkWrapUncontended measures it for a ServeMux: one acquire
// and one release script on a local redis-server, no HTTP transport.
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.Start(b)
	locks := lockmw.New(srv.NewClient())
	defer locks.Close()
	noop := func(*gin.Context) {}
	for _, bc := range []struct {
		name string
		mw   []gin.HandlerFunc
	}{
		{"without middleware", nil},
		{"per route", []gin.HandlerFunc{ginmw.New(locks)}},
		{"per resource", []gin.HandlerFunc{ginmw.New(locks, httpmw.WithPathValues("id"))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := gin.New()
			r.Use(bc.mw...)
			r.POST("/orders/:id", noop)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r.ServeHTTP(w, httptest.NewRequest("POST", "/orders/1", nil))
				if w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
