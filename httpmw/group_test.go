package httpmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

// Every lock's group (lockmw.WithGroup) is its name without the path
// values: the route's lock, a bounded label for metrics.
func TestTheGroupIsTheNameWithoutThePathValues(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	type names struct{ name, group string }
	seen := make(chan names, 1)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			seen <- names{e.Name, e.Group}
			return ctx
		},
	}))
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	tenant := func(r *http.Request) string { return "tenant:" + r.Header.Get("X-Tenant") }
	for _, tc := range []struct {
		what string
		opts []httpmw.Option
		mux  bool // WrapMux instead of Wrap
		want names
	}{
		{"the default key", nil, false, names{"http:POST /orders/{id}", "http:POST /orders/{id}"}},
		{"a key per resource", []httpmw.Option{httpmw.WithPathValues("id")}, false, names{"http:POST /orders/{id}#id=42", "http:POST /orders/{id}"}},
		{"a key per resource under a limit", []httpmw.Option{httpmw.WithPathValues("id"), httpmw.WithPermits(2)}, false, names{"http:limit:POST /orders/{id}#id=42", "http:limit:POST /orders/{id}"}},
		{"a key function of the user's", []httpmw.Option{httpmw.WithKey(tenant)}, false, names{"tenant:7", "tenant:7"}},
		{"a key function of the user's with path values", []httpmw.Option{httpmw.WithKey(tenant), httpmw.WithPathValues("id")}, false, names{"tenant:7#id=42", "tenant:7"}},
		{"WrapMux", nil, true, names{"http:POST /orders/{id}", "http:POST /orders/{id}"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			mw := httpmw.New(c, tc.opts...)
			mux := http.NewServeMux()
			var h http.Handler = mux
			if tc.mux {
				mux.Handle("POST /orders/{id}", ok)
				h = mw.WrapMux(mux)
			} else {
				mux.Handle("POST /orders/{id}", mw.Wrap(ok))
			}
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", nil)
			r.Header.Set("X-Tenant", "7")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tc.want, testsupport.Recv(t, seen, routertest.Patience, "an AcquireStart event"))
		})
	}
}
