package fibermw_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

// server is a fiber app listening on a loopback port, with an HTTP client
// of its own: fiber serves fasthttp, not an http.Handler, so
// routertest.Serve cannot start it.
type server struct {
	url    string
	client *http.Client
}

// serve runs app on 127.0.0.1:0 until the test's clean-up, which shuts it
// down and waits for it to stop.
func serve(t *testing.T, app *fiber.App) *server {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	stopped := make(chan error, 1)
	go func() { stopped <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		require.NoError(t, app.ShutdownWithTimeout(routertest.Patience))
		require.NoError(t, testsupport.Recv(t, stopped, routertest.Patience, "the app stopping"))
	})
	return &server{url: "http://" + ln.Addr().String(), client: &http.Client{Transport: transport}}
}

// send sends a request with the header lines given as "Name: value".
func (s *server) send(ctx context.Context, method, path string, header ...string) routertest.Reply {
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, nil)
	if err != nil {
		return routertest.Reply{Err: err}
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	return routertest.Do(s.client, req)
}

// sendAsync sends the request on its own goroutine; the reply arrives on the
// returned channel.
func (s *server) sendAsync(ctx context.Context, method, path string, header ...string) <-chan routertest.Reply {
	return routertest.Async(func() routertest.Reply { return s.send(ctx, method, path, header...) })
}

// status sends the request and returns its status, failing the test when
// there is none.
func (s *server) status(t *testing.T, method, path string, header ...string) int {
	t.Helper()
	r := s.send(t.Context(), method, path, header...)
	require.NoError(t, r.Err)
	return r.Status
}

// barrier is routertest's barrier as a fiber handler: 200 when parties
// handlers were inside at once, 500 when they were not.
func barrier(parties int) fiber.Handler {
	b := routertest.NewBarrier(parties)
	return func(c fiber.Ctx) error {
		if !b.Meet() {
			return c.Status(fiber.StatusInternalServerError).SendString(routertest.Alone)
		}
		return nil
	}
}
