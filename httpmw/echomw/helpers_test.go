package echomw_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/lockmw"
)

// patience bounds every wait for something that should happen soon.
const patience = 5 * time.Second

// newEcho returns a quiet Echo whose log is discarded.
func newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	return e
}

// startHTTP serves e on a test server, closed at cleanup, whose error log
// is discarded.
func startHTTP(t *testing.T, e *echo.Echo) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(e)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

func send(ctx context.Context, s *httptest.Server, method, path string) reply {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, nil)
	if err != nil {
		return reply{err: err}
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// sendAsync sends the request on its own goroutine; the reply arrives on the
// returned channel.
func sendAsync(ctx context.Context, s *httptest.Server, method, path string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- send(ctx, s, method, path) }()
	return ch
}

// queued is the number of waiters in the lock's queue, the sorted set
// rlock_queue:{name} described in lockmw's package documentation.
func queued(t *testing.T, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	require.NotContains(t, name, "{", "a name with a brace has another queue key")
	n, err := rdb.ZCard(context.Background(), "rlock_queue:{"+name+"}").Result()
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

// isLocked reports whether anyone holds name.
func isLocked(t *testing.T, c *lockmw.Client, name string) bool {
	t.Helper()
	locked, err := c.Mutex(name).IsLocked(context.Background())
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
func barrier(parties int) echo.HandlerFunc {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return func(c echo.Context) error {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return c.NoContent(http.StatusOK)
		case <-time.After(patience):
			return c.String(http.StatusInternalServerError, "alone: no overlap")
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), s)
}
