package httpmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// One request per order at a time; a request for a busy order is refused at
// once, another order is served meanwhile.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	perOrder := httpmw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0))
	inside, finish := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", perOrder.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			close(inside)
			<-finish
		}
		fmt.Fprintf(w, "order %s updated\n", r.PathValue("id"))
	})))
	s := httptest.NewServer(mux)
	defer s.Close()

	post := func(path string) string {
		resp, err := http.Post(s.URL+path, "text/plain", nil)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			return resp.Status + ", Retry-After: " + ra
		}
		return resp.Status
	}

	first := make(chan string)
	go func() { first <- post("/orders/1?slow") }()
	<-inside // order 1 is being updated
	fmt.Println("order 1 again:", post("/orders/1"))
	fmt.Println("order 2:", post("/orders/2"))
	close(finish)
	fmt.Println("order 1:", <-first)
	// Output:
	// order 1 again: 409 Conflict, Retry-After: 1
	// order 2: 200 OK
	// order 1: 200 OK
}

// Every route of a mux, one lock per pattern.
func ExampleMiddleware_WrapMux() {
	var locks *lockmw.Client // lockmw.New(rdb)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /reports", func(w http.ResponseWriter, r *http.Request) { /* ... */ })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { /* ... */ })

	// "POST /reports" locks "http:POST /reports"; so does "GET /health",
	// under its own name. Use Wrap per route to lock only some routes.
	handler := httpmw.New(locks, httpmw.WithWait(2*time.Second)).WrapMux(mux)
	_ = http.ListenAndServe(":8080", handler)
}

// A key of one's own: one lock per tenant, whatever the route; requests
// without a tenant are not locked.
func ExampleWithKey() {
	var locks *lockmw.Client // lockmw.New(rdb)
	m := httpmw.New(locks, httpmw.WithKey(func(r *http.Request) string {
		if t := r.Header.Get("X-Tenant"); t != "" {
			return "tenant:" + t
		}
		return ""
	}))
	_ = m
}

// Leased holds: a busy answer tells the client how long the holder has left.
func ExampleWithLease() {
	var locks *lockmw.Client // lockmw.New(rdb)
	// Handlers must finish within 30s: r.Context() ends at the lease end.
	m := httpmw.New(locks, httpmw.WithLease(30*time.Second), httpmw.WithBusyStatus(http.StatusTooManyRequests))
	_ = m
}

// At most three exports per tenant at once, across every instance; a fourth
// waits up to 30s for a permit, then gets 429 Too Many Requests.
func ExampleWithPermits() {
	var locks *lockmw.Client // lockmw.New(rdb)
	exports := httpmw.New(locks, httpmw.WithPathValues("tenant"), httpmw.WithPermits(3),
		httpmw.WithWait(30*time.Second), httpmw.WithBusyStatus(http.StatusTooManyRequests))
	mux := http.NewServeMux()
	// Each tenant's semaphore is "http:limit:POST /tenants/{tenant}/exports#tenant=<tenant>".
	mux.Handle("POST /tenants/{tenant}/exports", exports.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { /* ... */ })))
}

// Under WithReadWrite the default key is the route's template without the
// method, so GET /orders/{id} ("http:rw:/orders/{id}#id=7") and an action
// route, POST /orders/{id}/pay ("http:rw:/orders/{id}/pay#id=7"), never
// meet. A WithKey naming the resource joins them: both take the read-write
// lock "http:rw:/orders/{id}#id=7", the GET its read side, the POST its
// write side. While another instance writes order 7, both are refused.
func ExampleWithReadWrite_actions() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	order := httpmw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id"), httpmw.WithWait(0),
		httpmw.WithKey(func(*http.Request) string { return "http:/orders/{id}" }))
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", order.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"))
	})))
	mux.Handle("POST /orders/{id}/pay", order.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"), "paid")
	})))
	s := httptest.NewServer(mux)
	defer s.Close()

	other := lockmw.New(srv.NewClient()) // another instance, writing order 7
	defer other.Close()
	hold, err := other.RWMutex("http:rw:/orders/{id}#id=7").TryLock(context.Background(), 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET /orders/7:", send(s.URL, "GET", "/orders/7"))
	fmt.Println("POST /orders/7/pay:", send(s.URL, "POST", "/orders/7/pay"))
	fmt.Println("GET /orders/8:", send(s.URL, "GET", "/orders/8"))
	_ = other.RWMutex("http:rw:/orders/{id}#id=7").Unlock(hold)
	fmt.Println("POST /orders/7/pay:", send(s.URL, "POST", "/orders/7/pay"))
	// Output:
	// GET /orders/7: 409 Conflict
	// POST /orders/7/pay: 409 Conflict
	// GET /orders/8: 200 OK
	// POST /orders/7/pay: 200 OK
}

// send makes one request and returns the answer's status.
func send(base, method, path string) string {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	return resp.Status
}
