package chi_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// misplacements are the ways to mount Wrap where chi has not routed the
// request to its route yet; each mounts m.Wrap, then h, on POST
// /orders/{id} of r.
var misplacements = []struct {
	name  string
	mount func(r *chi.Mux, m *httpmw.Middleware, h http.HandlerFunc)
}{
	{"r.Use at the top of the router (r.Pattern is empty)", func(r *chi.Mux, m *httpmw.Middleware, h http.HandlerFunc) {
		r.Use(m.Wrap)
		r.Post("/orders/{id}", h)
	}},
	{`Use inside r.Route (r.Pattern is "/orders/*")`, func(r *chi.Mux, m *httpmw.Middleware, h http.HandlerFunc) {
		r.Route("/orders", func(r chi.Router) {
			r.Use(m.Wrap)
			r.Post("/{id}", h)
		})
	}},
	{`Use in a router given to Mount (r.Pattern is "/orders/*")`, func(r *chi.Mux, m *httpmw.Middleware, h http.HandlerFunc) {
		sub := chi.NewRouter()
		sub.Use(m.Wrap)
		sub.Post("/{id}", h)
		r.Mount("/orders", sub)
	}},
	{"Wrap around the whole router (r.Pattern is empty)", func(r *chi.Mux, m *httpmw.Middleware, h http.HandlerFunc) {
		// Served as m.Wrap(r) below.
		r.Post("/orders/{id}", h)
	}},
}

func TestMisplacedWrapIsRefusedLoudly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for i, mp := range misplacements {
		t.Run(mp.name, func(t *testing.T) {
			logger, buf := newLogger()
			m := httpmw.New(locktest.NewOn(t, srv), logger)
			var ran atomic.Int32
			r := chi.NewRouter()
			mp.mount(r, m, func(http.ResponseWriter, *http.Request) { ran.Add(1) })
			var h http.Handler = r
			if i == len(misplacements)-1 {
				h = m.Wrap(r)
			}
			s := routertest.Serve(t, h)

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
			assert.Contains(t, lines[0], "r.With(m.Wrap)", "the log names chi's fix")
			assert.Contains(t, lines[0], "/orders/7")

			// A second Middleware logs once more.
			logger2, buf2 := newLogger()
			r2 := chi.NewRouter()
			m2 := httpmw.New(locktest.NewOn(t, srv), logger2)
			mp.mount(r2, m2, func(http.ResponseWriter, *http.Request) { ran.Add(1) })
			h = r2
			if i == len(misplacements)-1 {
				h = m2.Wrap(r2)
			}
			reply := routertest.Send(t.Context(), routertest.Serve(t, h), "POST", "/orders/8")
			require.NoError(t, reply.Err)
			assert.Equal(t, http.StatusInternalServerError, reply.Status, reply.Body)
			assert.Len(t, buf2.Lines(), 1)
			assert.Len(t, buf.Lines(), 1, "the first Middleware logged again")
		})
	}
}

// chi's top-level Use runs before chi looks for a route, so a misplaced
// Wrap cannot tell a request for an unknown path from one for a route:
// it refuses every request, which is what makes the misplacement show.
func TestMisplacedTopLevelUseRefusesUnknownPathsToo(t *testing.T) {
	t.Parallel()
	logger, _ := newLogger()
	m := httpmw.New(locktest.NewOn(t, redistest.Start(t)), logger)
	r := chi.NewRouter()
	r.Use(m.Wrap)
	r.Post("/orders/{id}", func(http.ResponseWriter, *http.Request) {})
	reply := routertest.Send(t.Context(), routertest.Serve(t, r), "GET", "/nowhere")
	require.NoError(t, reply.Err)
	assert.Equal(t, http.StatusInternalServerError, reply.Status, reply.Body)
}
