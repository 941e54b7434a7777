package ginmw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/ginmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

// Under WithReadWrite a resource's GETs run together and its writes alone;
// gin's GET and PUT routes of one template meet on one lock.
func TestReadWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	t.Run("reads share", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id")))
		r.GET("/docs/:id", barrier(2))
		s := startHTTP(t, r)
		for _, ch := range []<-chan reply{sendAsync(t.Context(), s, "GET", "/docs/1"), sendAsync(t.Context(), s, "GET", "/docs/1")} {
			r := testsupport.Recv(t, ch, patience, "reply")
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusOK, r.status, "a read waited for a read: %s", r.body)
		}
	})

	t.Run("a write excludes reads and writes", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id"), httpmw.WithWait(0)))
		r.GET("/docs/:id", func(c *gin.Context) {})
		r.PUT("/docs/:id", func(c *gin.Context) {})
		s := startHTTP(t, r)
		rw := locktest.NewOn(t, srv).RWMutex("http:rw:/docs/:id#id=7")
		hold, err := rw.TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, send(t.Context(), s, "GET", "/docs/7", nil).status, "a read beside a write")
		assert.Equal(t, http.StatusConflict, send(t.Context(), s, "PUT", "/docs/7", nil).status, "a write beside a write")
		assert.Equal(t, http.StatusOK, send(t.Context(), s, "GET", "/docs/8", nil).status, "another doc is free")
		require.NoError(t, rw.Unlock(hold))

		read, err := rw.RLocker().TryLock(context.Background(), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, send(t.Context(), s, "GET", "/docs/7", nil).status, "a read beside a read")
		assert.Equal(t, http.StatusConflict, send(t.Context(), s, "PUT", "/docs/7", nil).status, "a write beside a read")
		require.NoError(t, rw.RLocker().Unlock(read))
		assert.Equal(t, http.StatusOK, send(t.Context(), s, "PUT", "/docs/7", nil).status)
	})
}
