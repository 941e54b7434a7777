package fibermw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw/fibermw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// Under WithReadWrite a resource's GETs run together and its writes alone;
// fiber's GET and PUT routes of one template meet on one lock.
func TestReadWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	t.Run("reads share", func(t *testing.T) {
		app := newApp()
		app.Get("/docs/:id", fibermw.New(locks, fibermw.WithReadWrite(), fibermw.WithParams("id")), barrier(2))
		s := serve(t, app)
		for _, ch := range []<-chan routertest.Reply{s.sendAsync(t.Context(), "GET", "/docs/1"), s.sendAsync(t.Context(), "GET", "/docs/1")} {
			r := testsupport.Recv(t, ch, routertest.Patience, "reply")
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusOK, r.Status, "a read waited for a read: %s", r.Body)
		}
	})

	t.Run("a write excludes reads and writes", func(t *testing.T) {
		app := newApp()
		mw := fibermw.New(locks, fibermw.WithReadWrite(), fibermw.WithParams("id"), fibermw.WithWait(0))
		app.Get("/docs/:id", mw, ok)
		app.Put("/docs/:id", mw, ok)
		s := serve(t, app)
		rw := locktest.NewOn(t, srv).RWMutex("http:rw:/docs/:id#id=7")
		hold, err := rw.TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, s.status(t, "GET", "/docs/7"), "a read beside a write")
		assert.Equal(t, http.StatusConflict, s.status(t, "PUT", "/docs/7"), "a write beside a write")
		assert.Equal(t, http.StatusOK, s.status(t, "GET", "/docs/8"), "another doc is free")
		require.NoError(t, rw.Unlock(hold))

		read, err := rw.RLocker().TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, s.status(t, "GET", "/docs/7"), "a read beside a read")
		assert.Equal(t, http.StatusConflict, s.status(t, "PUT", "/docs/7"), "a write beside a read")
		require.NoError(t, rw.RLocker().Unlock(read))
		assert.Equal(t, http.StatusOK, s.status(t, "PUT", "/docs/7"))
	})
}
