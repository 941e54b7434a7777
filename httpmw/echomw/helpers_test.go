package echomw_test

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// newEcho returns a quiet Echo whose log is discarded.
func newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	return e
}

// barrier is routertest's barrier as an echo handler: 200 when parties
// handlers were inside at once, 500 when they were not.
func barrier(parties int) echo.HandlerFunc {
	b := routertest.NewBarrier(parties)
	return func(c echo.Context) error {
		if !b.Meet() {
			return c.String(http.StatusInternalServerError, routertest.Alone)
		}
		return c.NoContent(http.StatusOK)
	}
}
