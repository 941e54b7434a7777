package httpmw

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// muxKey serves one request for path through a ServeMux with pattern and
// returns the key a Middleware with opts computes inside the handler.
func muxKey(t *testing.T, pattern, method, path string, opts ...Option) string {
	t.Helper()
	m := &Middleware{cfg: newConfig(opts)}
	var key string
	served := false
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		served = true
		key = m.Key(r)
	})
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
	require.True(t, served, "pattern %q did not match %s %s", pattern, method, path)
	return key
}

func TestKey(t *testing.T) {
	tests := []struct {
		name, pattern, method, path string
		opts                        []Option
		want                        string
	}{
		{"the default is the prefixed pattern", "POST /orders/{id}", "POST", "/orders/1", nil, "http:POST /orders/{id}"},
		{"a pattern without method gets the request's", "/health", "GET", "/health", nil, "http:GET /health"},
		{"so GET and POST of it are two locks", "/health", "POST", "/health", nil, "http:POST /health"},
		{"a made-up method counts as _OTHER", "/health", "BREW", "/health", nil, "http:_OTHER /health"},
		{"a pattern with a host and no method gets the method", "example.com/x", "GET", "/x", nil, "http:GET example.com/x"},
		{"WithOneLockPerPath leaves the method out", "/health", "POST", "/health", []Option{WithOneLockPerPath()}, "http:/health"},
		{"WithOneLockPerPath keeps a pattern's own method", "POST /health", "POST", "/health", []Option{WithOneLockPerPath()}, "http:POST /health"},
		{"path values are appended", "POST /orders/{id}", "POST", "/orders/1", []Option{WithPathValues("id")}, "http:POST /orders/{id}#id=1"},
		{"several path values keep their order", "/a/{x}/b/{y}", "GET", "/a/1/b/2", []Option{WithPathValues("y", "x")}, "http:GET /a/{x}/b/{y}#y=2&x=1"},
		{"several WithPathValues add up", "/a/{x}/b/{y}", "GET", "/a/1/b/2", []Option{WithPathValues("x"), WithPathValues("y")}, "http:GET /a/{x}/b/{y}#x=1&y=2"},
		{"separators in values are escaped", "/o/{id}", "GET", "/o/a%26id=2%23x%25", []Option{WithPathValues("id")}, "http:GET /o/{id}#id=a%26id%3D2%23x%25"},
		{"a remainder wildcard is escaped", "/f/{rest...}", "GET", "/f/a/b%20c", []Option{WithPathValues("rest")}, "http:GET /f/{rest...}#rest=a%2Fb+c"},
		{"a missing wildcard is empty", "/o/{id}", "GET", "/o/1", []Option{WithPathValues("nope")}, "http:GET /o/{id}#nope="},
		{"'#' and '%' in a pattern are escaped", "/a#b%c", "GET", "/a%23b%25c", nil, "http:GET /a%23b%25c"},
		{"a custom key is used as is", "/o/{id}", "GET", "/o/1", []Option{WithKey(func(r *http.Request) string { return "orders" })}, "orders"},
		{"a custom key gets path values too", "/o/{id}", "GET", "/o/7", []Option{WithKey(func(*http.Request) string { return "orders" }), WithPathValues("id")}, "orders#id=7"},
		{"an empty custom key means no lock, even with path values", "/o/{id}", "GET", "/o/7", []Option{WithKey(func(*http.Request) string { return "" }), WithPathValues("id")}, ""},
		{"WithPermits(1) keeps the name", "POST /orders/{id}", "POST", "/orders/1", []Option{WithPermits(1), WithPathValues("id")}, "http:POST /orders/{id}#id=1"},
		{"a limit puts limit: after the prefix", "POST /exports", "POST", "/exports", []Option{WithPermits(3)}, "http:limit:POST /exports"},
		{"a limit per resource", "POST /orders/{id}", "POST", "/orders/1", []Option{WithPermits(2), WithPathValues("id")}, "http:limit:POST /orders/{id}#id=1"},
		{"a limit on a custom key puts limit: in front", "/o/{id}", "GET", "/o/7", []Option{WithKey(func(*http.Request) string { return "tenant:7" }), WithPermits(2)}, "limit:tenant:7"},
		{"a limit on a custom key with the prefix puts limit: after it", "/o/{id}", "GET", "/o/7", []Option{WithKey(PatternKey), WithPermits(2)}, "http:limit:GET /o/{id}"},
		{"a limit on an empty key means no lock", "/o/{id}", "GET", "/o/7", []Option{WithKey(func(*http.Request) string { return "" }), WithPermits(2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, muxKey(t, tt.pattern, tt.method, tt.path, tt.opts...))
		})
	}
}

func TestKeyOutsideAMuxIsEmpty(t *testing.T) {
	m := &Middleware{cfg: defaultConfig()}
	assert.Empty(t, m.Key(httptest.NewRequest("GET", "/x", nil)))
}

// Distinct patterns and values give distinct keys: no crafted value or
// pattern can take another resource's lock.
func TestKeysDoNotCollide(t *testing.T) {
	m := &Middleware{cfg: defaultConfig()}
	WithPathValues("id")(&m.cfg)
	type in struct{ pattern, id string }
	ins := []in{
		{"/o/{id}", "1"},
		{"/o/{id}", "1&id=2"},
		{"/o/{id}", "1#id=2"},
		{"/o/{id}", "%"},
		{"/o/{id}", "%25"},
		{"/o/{id}", "a+b"},
		{"/o/{id}", "a b"},
		{"/o/{id}", ""},
		{"/o/{id}#id=1", "x"},
		{"/o/{id}", "x#id=1"},
		{"/o/{id}%23id=1", "x"},
		{"/o/{id}", "x%23id=1"},
	}
	seen := map[string]in{}
	for _, x := range ins {
		r := &http.Request{Pattern: x.pattern}
		r.SetPathValue("id", x.id)
		k := m.Key(r)
		prev, dup := seen[k]
		assert.False(t, dup, "%v and %v share key %q", prev, x, k)
		seen[k] = x
		assert.Equal(t, 1, strings.Count(k, "#"), "key %q", k)
	}
	// Per-route keys of patterns that look like per-resource keys.
	for _, p := range []string{"/o/{id}#id=1", "/o/{id}%23id=1", "/o/{id}#id=x"} {
		k := patternKey(p)
		_, dup := seen[k]
		assert.False(t, dup, "pattern %q gives a per-resource key %q", p, k)
		assert.NotContains(t, k, "#")
	}
}

func TestEscapePattern(t *testing.T) {
	assert.Equal(t, "POST /orders/{id}", escapePattern("POST /orders/{id}"))
	assert.Equal(t, "/%01%FF%25%23é", escapePattern("/\x01\xff%#é"))
}

func TestDefaults(t *testing.T) {
	c := defaultConfig()
	assert.Equal(t, 10*time.Second, c.wait)
	assert.Equal(t, http.StatusConflict, c.busyStatus)
	assert.Equal(t, time.Second, c.retryAfter)
	assert.Equal(t, time.Duration(0), c.lease)
	assert.EqualValues(t, 64<<10, c.bodyBuffer)
	assert.Empty(t, c.pathValues)
	r := &http.Request{Pattern: "GET /x"}
	assert.Equal(t, "http:GET /x", c.key(r))
	assert.Equal(t, DefaultWait, c.wait)
	assert.Equal(t, DefaultBusyStatus, c.busyStatus)
	assert.Equal(t, DefaultRetryAfter, c.retryAfter)
	assert.EqualValues(t, DefaultBodyBuffer, c.bodyBuffer)
	assert.False(t, c.perPath, "one lock per method and pattern by default")
	assert.Same(t, slog.Default(), newConfig(nil).logger, "the default logger is slog.Default()")
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 1, time.Millisecond: 1, time.Second: 1, time.Second + 1: 2, 2500 * time.Millisecond: 3, time.Minute: 60,
	} {
		assert.Equal(t, want, seconds(d), "%v", d)
	}
}

func TestMisplaced(t *testing.T) {
	for pattern, want := range map[string]bool{
		"":                  true,  // no route known
		"/orders/*":         true,  // chi's mount
		"GET /files/*":      false, // a route's catch-all, as adapters set it
		"/orders/{id}":      false, // chi's route
		"POST /orders/{id}": false,
		"/api/":             false, // a ServeMux subtree: a route (see docs/http.md's chi caveat)
	} {
		assert.Equal(t, want, misplaced(pattern), "%q", pattern)
	}
}
