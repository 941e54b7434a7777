package ginmw_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode) // no debug prints
	goleak.VerifyTestMain(m)
}

// patience bounds every wait for something that should happen soon.
const patience = 5 * time.Second

// newEngine is a gin engine whose recovery logs nothing.
func newEngine() *gin.Engine {
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard))
	return r
}

// startHTTP serves h on a test server, closed at cleanup, whose error log is
// discarded.
func startHTTP(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
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

func send(ctx context.Context, s *httptest.Server, method, path string, body io.Reader) reply {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, body)
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
	go func() { ch <- send(ctx, s, method, path, nil) }()
	return ch
}

// holdLock takes name on a Client of its own, as another instance would,
// until release.
func holdLock(t *testing.T, srv *redistest.Server, name string) (release func()) {
	t.Helper()
	mu := locktest.NewOn(t, srv).Mutex(name)
	hctx, err := mu.TryLock(context.Background(), 0, 0)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = mu.Unlock(hctx) }) }
	t.Cleanup(release)
	return release
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
func barrier(parties int) gin.HandlerFunc {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return func(c *gin.Context) {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			c.Status(http.StatusOK)
		case <-time.After(patience):
			c.String(http.StatusInternalServerError, "alone: no overlap")
		}
	}
}
