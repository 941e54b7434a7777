package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
)

const (
	httpRequests = 5
	httpWork     = 100 * time.Millisecond // a handler's work under the lock
)

// httpService is one instance of a small order service behind an httptest
// server, on its own lockmw Client.
type httpService struct {
	name  string
	locks *lockmw.Client
	srv   *httptest.Server
}

// httpJournal tracks the handlers of all instances.
type httpJournal struct {
	mu      sync.Mutex
	running int
	maxRun  int
	order   []string // request numbers, in the order their handlers started

	reportInside chan struct{} // closed when the first report runs
	inside       sync.Once
	reportFinish chan struct{} // closed to let it finish
}

// httpSection starts two instances of an order service with httpmw, sends
// concurrent requests for one order to both and checks that they ran one at
// a time; then it shows a route that does not wait answer 409 with
// Retry-After while another request holds its lock.
func httpSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	j := &httpJournal{reportInside: make(chan struct{}), reportFinish: make(chan struct{})}
	var services []*httpService
	defer func() {
		for _, s := range services {
			s.srv.Close()
			_ = s.locks.Close()
		}
	}()
	for _, name := range []string{"instance-A", "instance-B"} {
		services = append(services, newHTTPService(name, rdb, j, p))
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	finishReport := sync.OnceFunc(func() { close(j.reportFinish) })
	defer finishReport() // first, so that the servers can close

	p.note("instance-A and instance-B serve POST /orders/{id} through httpmw.New(c, WithPathValues(\"id\")),")
	p.note("which locks %q for order 42; each request works %v under it", "http:POST /orders/{id}#id=42", httpWork)

	type answer struct {
		status string
		took   time.Duration
		err    error
	}
	answers := make([]answer, httpRequests)
	var wg sync.WaitGroup
	for i := range httpRequests {
		s := services[i%len(services)]
		n := i + 1
		p.event("request %d sent to %s", n, s.name)
		wg.Go(func() {
			start := time.Now()
			resp, err := post(ctx, client, fmt.Sprintf("%s/orders/42?n=%d", s.srv.URL, n))
			answers[i] = answer{took: time.Since(start), err: err}
			if err == nil {
				answers[i].status = resp.Status
				p.event("request %d answered %s after %v", n, resp.Status, time.Since(start).Round(time.Millisecond))
			}
		})
		// A little apart, so that the requests queue up in a known order.
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	for i, a := range answers {
		if a.err != nil {
			return fmt.Errorf("request %d: %w", i+1, a.err)
		}
		if a.status != "200 OK" {
			return fmt.Errorf("request %d: %s, want 200 OK", i+1, a.status)
		}
	}
	j.mu.Lock()
	maxRun, order := j.maxRun, strings.Join(j.order, " ")
	j.mu.Unlock()
	if maxRun != 1 {
		return fmt.Errorf("%d requests for order 42 ran at once", maxRun)
	}
	p.summary("%d concurrent requests, all 200 OK, run one at a time across both instances, in the order %s", httpRequests, order)

	// A route that does not wait: busy means 409 with Retry-After.
	p.blank()
	p.note("POST /reports uses httpmw.New(c, WithWait(0), WithRetryAfter(2*time.Second)): no waiting")
	first := make(chan answer, 1)
	go func() {
		resp, err := post(ctx, client, services[0].srv.URL+"/reports")
		a := answer{err: err}
		if err == nil {
			a.status = resp.Status
		}
		first <- a
	}()
	select {
	case <-j.reportInside:
	case a := <-first:
		return fmt.Errorf("the first report ended before it ran: %s %v", a.status, a.err)
	case <-ctx.Done():
		return ctx.Err()
	}
	resp, err := post(ctx, client, services[1].srv.URL+"/reports")
	if err != nil {
		return err
	}
	retryAfter := resp.Header.Get("Retry-After")
	p.event("report 2 on instance-B meanwhile: %s, Retry-After: %s", resp.Status, retryAfter)
	finishReport()
	a := <-first
	if a.err != nil {
		return fmt.Errorf("report 1: %w", a.err)
	}
	p.event("report 1 on instance-A: %s", a.status)
	if resp.StatusCode != http.StatusConflict || retryAfter == "" || a.status != "200 OK" {
		return fmt.Errorf("reports: got %s with Retry-After %q and %s, want 409 Conflict with a Retry-After and 200 OK", resp.Status, retryAfter, a.status)
	}
	p.summary("a busy route answers at once: %s, Retry-After: %s", resp.Status, retryAfter)
	return nil
}

// newHTTPService starts one instance of the service.
func newHTTPService(name string, rdb redis.UniversalClient, j *httpJournal, p *printer) *httpService {
	locks := lockmw.New(rdb, withName(name))
	perOrder := httpmw.New(locks, httpmw.WithPathValues("id"))
	noWait := httpmw.New(locks, httpmw.WithWait(0), httpmw.WithRetryAfter(2*time.Second))

	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", perOrder.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		j.mu.Lock()
		j.running++
		j.maxRun = max(j.maxRun, j.running)
		j.order = append(j.order, n)
		j.mu.Unlock()
		p.event("request %s runs on %s", n, name)
		select {
		case <-time.After(httpWork):
		case <-r.Context().Done():
		}
		j.mu.Lock()
		j.running--
		j.mu.Unlock()
		fmt.Fprintf(w, "order %s updated by %s\n", r.PathValue("id"), name)
	})))
	mux.Handle("POST /reports", noWait.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.event("a report runs on %s, holding %q", name, "http:POST /reports")
		j.inside.Do(func() { close(j.reportInside) })
		select {
		case <-j.reportFinish:
		case <-r.Context().Done():
		}
		fmt.Fprintf(w, "report built by %s\n", name)
	})))
	return &httpService{name: name, locks: locks, srv: httptest.NewServer(mux)}
}

// post sends an empty POST and reads the answer's body to its end.
func post(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, errors.Join(fmt.Errorf("reading the answer to POST %s", url), err)
	}
	return resp, nil
}
