package fibermw_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
)

// patience bounds every wait for something that should happen soon.
const patience = 10 * time.Second

// server is a fiber app listening on a loopback port, with an HTTP client
// of its own.
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
		require.NoError(t, app.ShutdownWithTimeout(patience))
		require.NoError(t, testsupport.Recv(t, stopped, patience, "the app stopping"))
	})
	return &server{url: "http://" + ln.Addr().String(), client: &http.Client{Transport: transport}}
}

type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

// send sends a request with the header lines given as "Name: value".
func (s *server) send(ctx context.Context, method, path string, header ...string) reply {
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, nil)
	if err != nil {
		return reply{err: err}
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// sendAsync sends the request on its own goroutine; the reply arrives on the
// returned channel.
func (s *server) sendAsync(ctx context.Context, method, path string, header ...string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- s.send(ctx, method, path, header...) }()
	return ch
}

// status sends the request and returns its status, failing the test when
// there is none.
func (s *server) status(t *testing.T, method, path string, header ...string) int {
	t.Helper()
	r := s.send(t.Context(), method, path, header...)
	require.NoError(t, r.err)
	return r.status
}

// queued is the number of waiters in the lock's queue, the sorted set
// rlock_queue:{name} described in lockmw's package documentation (a name
// that already has a brace is not wrapped again, and gets a '~' after it).
func queued(t *testing.T, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	key := "rlock_queue:{" + name + "}"
	if strings.Contains(name, "{") {
		key = "rlock_queue:" + name + "~"
	}
	n, err := rdb.ZCard(context.Background(), key).Result()
	require.NoError(t, err)
	return n
}

// holdLock takes name on c as some other owner would, until release.
func holdLock(t *testing.T, c *lockmw.Client, name string) (release func()) {
	t.Helper()
	mu := c.Mutex(name)
	hctx, err := mu.TryLock(context.Background(), 0, 0)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = mu.Unlock(hctx) }) }
	t.Cleanup(release)
	return release
}

// isLocked reports whether someone holds name.
func isLocked(t *testing.T, c *lockmw.Client, name string) bool {
	t.Helper()
	locked, err := c.Mutex(name).IsLocked(t.Context())
	require.NoError(t, err)
	return locked
}

// gauge records how many handlers run at once.
type gauge struct {
	mu           sync.Mutex
	in, max, all int
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in++
	g.all++
	g.max = max(g.max, g.in)
}

func (g *gauge) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in--
}

// barrier returns a handler that answers 200 only when parties handlers are
// inside it at once, and 500 when they are not within patience.
func barrier(parties int) fiber.Handler {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return func(c fiber.Ctx) error {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(patience):
			return c.Status(fiber.StatusInternalServerError).SendString("alone: no overlap")
		}
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
