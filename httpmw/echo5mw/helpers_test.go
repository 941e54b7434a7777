package echo5mw_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/labstack/echo/v5"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newEcho returns a quiet Echo whose log is discarded.
func newEcho() *echo.Echo {
	e := echo.New()
	e.Logger = slog.New(slog.DiscardHandler)
	return e
}

// barrier is routertest's barrier as an echo handler: 200 when parties
// handlers were inside at once, 500 when they were not.
func barrier(parties int) echo.HandlerFunc {
	b := routertest.NewBarrier(parties)
	return func(c *echo.Context) error {
		if !b.Meet() {
			return c.String(http.StatusInternalServerError, routertest.Alone)
		}
		return c.NoContent(http.StatusOK)
	}
}
