package gorilla_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/mux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// misplacements are the ways to mount Wrap where it cannot know the route;
// each returns the handler to serve for POST /orders/{id} with h.
var misplacements = []struct {
	name  string
	serve func(m *httpmw.Middleware, h http.HandlerFunc) http.Handler
}{
	{"router.Use(m.Wrap) without routePattern", func(m *httpmw.Middleware, h http.HandlerFunc) http.Handler {
		router := mux.NewRouter()
		router.Use(m.Wrap)
		router.HandleFunc("/orders/{id}", h).Methods("POST")
		return router
	}},
	{"routePattern and Wrap around the whole router", func(m *httpmw.Middleware, h http.HandlerFunc) http.Handler {
		router := mux.NewRouter()
		router.HandleFunc("/orders/{id}", h).Methods("POST")
		return routePattern(m.Wrap(router))
	}},
	{"a route without a path template", func(m *httpmw.Middleware, h http.HandlerFunc) http.Handler {
		router := mux.NewRouter()
		router.Use(routePattern, m.Wrap)
		router.Methods("POST").HandlerFunc(h)
		return router
	}},
	{"a route without a path template behind a ServeMux", func(m *httpmw.Middleware, h http.HandlerFunc) http.Handler {
		// The ServeMux's pattern "/" reaches gorilla's middleware and would
		// pass for a route's: routePattern clears it.
		router := mux.NewRouter()
		router.Use(routePattern, m.Wrap)
		router.MatcherFunc(func(*http.Request, *mux.RouteMatch) bool { return true }).HandlerFunc(h)
		sm := http.NewServeMux()
		sm.Handle("/", router)
		return sm
	}},
}

func TestMisplacedWrapIsRefusedLoudly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, mp := range misplacements {
		t.Run(mp.name, func(t *testing.T) {
			logger, buf := newLogger()
			var ran atomic.Int32
			s := routertest.Serve(t, mp.serve(httpmw.New(locktest.NewOn(t, srv), logger), func(http.ResponseWriter, *http.Request) { ran.Add(1) }))

			const n = 4
			replies := make(chan routertest.Reply, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { replies <- routertest.Send(t.Context(), s, "POST", "/orders/7") })
			}
			wg.Wait()
			close(replies)
			for reply := range replies {
				require.NoError(t, reply.Err)
				assert.Equal(t, http.StatusInternalServerError, reply.Status, reply.Body)
				assert.Contains(t, reply.Body, "misconfigured")
			}
			assert.Zero(t, ran.Load(), "the handler ran")
			lines := buf.Lines()
			require.Len(t, lines, 1, "one log line per Middleware")
			assert.Contains(t, lines[0], "/orders/7")
		})
	}
}
