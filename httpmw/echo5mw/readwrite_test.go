package echo5mw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/echo5mw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// Under WithReadWrite a resource's GETs run together and its writes alone;
// echo's GET and PUT routes of one template meet on one lock.
func TestReadWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	t.Run("reads share", func(t *testing.T) {
		e := newEcho()
		e.Use(echo5mw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id")))
		e.GET("/docs/:id", barrier(2))
		s := routertest.Serve(t, e)
		for _, ch := range []<-chan routertest.Reply{routertest.SendAsync(t.Context(), s, "GET", "/docs/1"), routertest.SendAsync(t.Context(), s, "GET", "/docs/1")} {
			r := testsupport.Recv(t, ch, routertest.Patience, "reply")
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusOK, r.Status, "a read waited for a read: %s", r.Body)
		}
	})

	t.Run("a write excludes reads and writes", func(t *testing.T) {
		e := newEcho()
		e.Use(echo5mw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id"), httpmw.WithWait(0)))
		e.GET("/docs/:id", func(*echo.Context) error { return nil })
		e.PUT("/docs/:id", func(*echo.Context) error { return nil })
		s := routertest.Serve(t, e)
		rw := locktest.NewOn(t, srv).RWMutex("http:rw:/docs/:id#id=7")
		hold, err := rw.TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "GET", "/docs/7").Status, "a read beside a write")
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "PUT", "/docs/7").Status, "a write beside a write")
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/docs/8").Status, "another doc is free")
		require.NoError(t, rw.Unlock(hold))

		read, err := rw.RLocker().TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/docs/7").Status, "a read beside a read")
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "PUT", "/docs/7").Status, "a write beside a read")
		require.NoError(t, rw.RLocker().Unlock(read))
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "PUT", "/docs/7").Status)
	})
}
