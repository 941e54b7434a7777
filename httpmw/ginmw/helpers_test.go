package ginmw_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode) // no debug prints
	goleak.VerifyTestMain(m)
}

// newEngine is a gin engine whose recovery logs nothing.
func newEngine() *gin.Engine {
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard))
	return r
}

// countAcquisitions returns a Client option that counts the Client's
// acquisition attempts into n.
func countAcquisitions(n *atomic.Int64) lockmw.Option {
	return lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			n.Add(1)
			return nil
		},
	})
}

// barrier is routertest's barrier as a gin handler: 200 when parties
// handlers were inside at once, 500 when they were not.
func barrier(parties int) gin.HandlerFunc {
	b := routertest.NewBarrier(parties)
	return func(c *gin.Context) {
		if !b.Meet() {
			c.String(http.StatusInternalServerError, routertest.Alone)
			return
		}
		c.Status(http.StatusOK)
	}
}
