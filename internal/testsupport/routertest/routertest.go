package routertest

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
)

// Patience bounds every wait for something that should happen soon. It is
// generous: the suite runs on a loaded 2-core machine.
const Patience = 10 * time.Second

// Serve serves h on a test server, closed at cleanup, whose error log
// (panics that reached the server) is discarded.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
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
	return SendBody(ctx, s, method, path, nil)
}

// SendBody sends a request with body (nil: none) to s and reads the whole
// reply.
func SendBody(ctx context.Context, s *httptest.Server, method, path string, body io.Reader) Reply {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, body)
	if err != nil {
		return Reply{Err: err}
	}
	return Do(s.Client(), req)
}

// Do sends req with c and reads the whole reply.
func Do(c *http.Client, req *http.Request) Reply {
	resp, err := c.Do(req)
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
	return Async(func() Reply { return Send(ctx, s, method, path) })
}

// Async runs send on a goroutine of its own; its reply arrives on the
// returned channel.
func Async(send func() Reply) <-chan Reply {
	ch := make(chan Reply, 1)
	go func() { ch <- send() }()
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

// Work counts itself in g while it does the work of a handler: long enough
// for overlaps to show.
func (g *Gauge) Work() {
	g.Enter()
	defer g.Exit()
	time.Sleep(2 * time.Millisecond)
}

// Handler is a handler that does g.Work.
func (g *Gauge) Handler() http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { g.Work() })
}

// Barrier proves that handlers overlap: each waits in Meet until parties of
// them are inside at once.
type Barrier struct {
	mu      sync.Mutex
	parties int
	inside  int
	all     chan struct{}
}

// NewBarrier returns a barrier for parties handlers.
func NewBarrier(parties int) *Barrier {
	return &Barrier{parties: parties, all: make(chan struct{})}
}

// Meet enters the barrier and reports whether all parties were inside
// within Patience.
func (b *Barrier) Meet() bool {
	b.mu.Lock()
	if b.inside++; b.inside == b.parties {
		close(b.all)
	}
	b.mu.Unlock()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case <-b.all:
		return true
	case <-timer.C:
		return false
	}
}

// Alone is the body a handler answers with status 500 when Meet was false.
const Alone = "alone: no overlap"

// ServeHTTP answers 200 when Meet is true, and 500 when it is not.
func (b *Barrier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !b.Meet() {
		http.Error(w, Alone, http.StatusInternalServerError)
	}
}

// AllOK waits for the reply on each of replies and fails the test unless
// each is a 200. It waits twice Patience: a Barrier answers 500 only after
// Patience, and that answer says more than a missing reply.
func AllOK(t testing.TB, replies ...<-chan Reply) {
	t.Helper()
	for _, ch := range replies {
		r := testsupport.Recv(t, ch, 2*Patience, "reply")
		if r.Err != nil {
			t.Fatalf("no reply: %v", r.Err)
		}
		if r.Status != http.StatusOK {
			t.Errorf("status %d, want 200: %s", r.Status, r.Body)
		}
	}
}
