package ginmw_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/ginmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

// A request a gin route answered busy reaches httpmw.WithOnSkip and the
// Client's Skip hooks, under the route template's lock.
func TestABusyRouteIsReportedAsASkip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hooks, events := locktest.Skips()
	reasons := make(chan error, 10)
	r := newEngine()
	r.POST("/orders/:id/pay", ginmw.New(locktest.NewOn(t, srv, hooks), httpmw.WithWait(0), httpmw.WithPathValues("id"),
		httpmw.WithOnSkip(func(_ *http.Request, reason error) { reasons <- reason })), func(*gin.Context) {})
	s := routertest.Serve(t, r)
	release := locktest.Hold(t, locktest.NewOn(t, srv), "http:POST /orders/:id/pay#id=7", 0)
	defer release()

	reply := routertest.Send(t.Context(), s, "POST", "/orders/7/pay")
	require.NoError(t, reply.Err)
	require.Equal(t, http.StatusConflict, reply.Status)
	require.ErrorIs(t, testsupport.Recv(t, reasons, 10*time.Second, "WithOnSkip's call"), lockmw.ErrNotAcquired)
	ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
	assert.Equal(t, lockmw.SkipBusy, ev.Reason)
	assert.Equal(t, lockmw.AdapterHTTP, ev.Adapter)
	assert.Equal(t, "http:POST /orders/:id/pay", ev.Group)
}
