// Command http shows httpmw serializing an HTTP route across instances; run
// it with
//
//	go run ./examples/http
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set
// REDIS_ADDR=host:port to use a real server.
//
// It starts two "instances" of a small order service, each with its own
// lockmw Client, on one Redis. POST /orders/{id} is serialized per order:
// requests for one order run one at a time across both instances, requests
// for different orders run side by side. POST /reports is serialized per
// route and does not wait (WithWait(0)): a second report while one runs gets
// 409 Conflict with a Retry-After header. The program fires concurrent
// requests at both instances and prints when each handler starts and ends,
// then each request's status code; it exits with status 1 if the lock let
// two requests for one order overlap.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

// work is how long a handler takes.
const work = 150 * time.Millisecond

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "http example:", err)
		os.Exit(1)
	}
}

// journal prints the handlers' events with the time since the start, and
// tracks how many handlers of each order run at once.
type journal struct {
	start time.Time
	mu    sync.Mutex
	in    map[string]int
	clash bool

	reportRunning chan struct{} // closed when the first report starts
	once          sync.Once
}

func (j *journal) event(instance, what, resource string, delta int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.in[resource] += delta
	if j.in[resource] > 1 {
		j.clash = true
	}
	fmt.Printf("%6s  %-10s %-5s %s\n", time.Since(j.start).Round(10*time.Millisecond), instance, what, resource)
}

// newInstance builds one instance of the service on its own lockmw Client.
func newInstance(name string, locks *lockmw.Client, j *journal) http.Handler {
	perOrder := httpmw.New(locks, httpmw.WithPathValues("id"))
	noWait := httpmw.New(locks, httpmw.WithWait(0), httpmw.WithRetryAfter(2*time.Second))

	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", perOrder.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		order := "order " + r.PathValue("id")
		j.event(name, "start", order, 1)
		time.Sleep(work) // the work done under the lock
		j.event(name, "end", order, -1)
		fmt.Fprintf(w, "%s updated by %s\n", order, name)
	})))
	mux.Handle("POST /reports", noWait.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.event(name, "start", "report", 1)
		j.once.Do(func() { close(j.reportRunning) })
		time.Sleep(2 * work)
		j.event(name, "end", "report", -1)
		fmt.Fprintf(w, "report made by %s\n", name)
	})))
	return mux
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()

	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()

	j := &journal{start: time.Now(), in: map[string]int{}, reportRunning: make(chan struct{})}
	var servers []*httptest.Server
	for _, name := range []string{"instance-A", "instance-B"} {
		locks := lockmw.New(rdb)
		defer locks.Close()
		s := httptest.NewServer(newInstance(name, locks, j))
		defer s.Close()
		servers = append(servers, s)
	}

	type request struct {
		instance int
		path     string
	}
	requests := []request{
		{0, "/orders/1"}, {1, "/orders/1"}, {0, "/orders/1"},
		{1, "/orders/2"},
		{0, "/reports"},
	}
	results := make([]string, len(requests))
	var wg sync.WaitGroup
	for i, rq := range requests {
		wg.Go(func() {
			results[i] = post(ctx, servers[rq.instance].URL+rq.path)
		})
	}
	// A second report once the first one runs: it is refused at once.
	select {
	case <-j.reportRunning:
	case <-ctx.Done():
		return ctx.Err()
	}
	second := post(ctx, servers[1].URL+"/reports")
	wg.Wait()

	fmt.Println()
	for i, rq := range requests {
		fmt.Printf("POST %-10s on %s: %s\n", rq.path, []string{"A", "B"}[rq.instance], results[i])
	}
	fmt.Printf("POST %-10s on %s: %s\n", "/reports", "B", second)
	if j.clash {
		return fmt.Errorf("two requests for one resource overlapped")
	}
	return nil
}

// post sends an empty POST and describes the answer.
func post(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	s := resp.Status
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		s += " (Retry-After: " + ra + ")"
	}
	return s
}
