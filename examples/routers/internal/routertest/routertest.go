package routertest

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
)

// Patience bounds every wait for something that should happen soon. It is
// generous: the suite runs on a loaded 2-core machine.
const Patience = 10 * time.Second

// Serve serves h on a test server, closed at cleanup, whose error log
// (panics that reached the server) is discarded.
func Serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Reply is what a request got back.
type Reply struct {
	Status int
	Header http.Header
	Body   string
	Err    error
}

// Send sends a request without a body to s and reads the whole reply.
func Send(ctx context.Context, s *httptest.Server, method, path string) Reply {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, nil)
	if err != nil {
		return Reply{Err: err}
	}
	return Do(s, req)
}

// Do sends req with s's client and reads the whole reply.
func Do(s *httptest.Server, req *http.Request) Reply {
	resp, err := s.Client().Do(req)
	if err != nil {
		return Reply{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Err: err}
}

// SendAsync sends the request on a goroutine of its own; the reply arrives
// on the returned channel.
func SendAsync(ctx context.Context, s *httptest.Server, method, path string) <-chan Reply {
	ch := make(chan Reply, 1)
	go func() { ch <- Send(ctx, s, method, path) }()
	return ch
}

// Gauge records how many handlers run at once.
type Gauge struct {
	mu           sync.Mutex
	in, max, all int
}

// Enter counts a handler in.
func (g *Gauge) Enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in++
	g.all++
	g.max = max(g.max, g.in)
}

// Exit counts a handler out.
func (g *Gauge) Exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in--
}

// Peak returns the most handlers that were inside at once, and how many
// entered in all.
func (g *Gauge) Peak() (peak, all int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max, g.all
}

// Handler is a handler that counts itself in g while it works.
func (g *Gauge) Handler() http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		g.Enter()
		defer g.Exit()
		time.Sleep(2 * time.Millisecond) // the work: long enough for overlaps to show
	})
}

// Barrier returns a handler that answers 200 only when parties handlers are
// inside it at once, and 500 when they are not within Patience.
func Barrier(parties int) http.Handler {
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if inside++; inside == parties {
			close(all)
		}
		mu.Unlock()
		timer := time.NewTimer(Patience)
		defer timer.Stop()
		select {
		case <-all:
		case <-timer.C:
			http.Error(w, "alone: no overlap", http.StatusInternalServerError)
		}
	})
}

// LogBuffer is an io.Writer for a slog handler that server goroutines write
// to while the test reads it.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Lines returns the lines written so far.
func (b *LogBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSuffix(b.buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
