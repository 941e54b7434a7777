package chi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// One request per order at a time, per method: r.With(m.Wrap) runs after
// chi matched the route. A second POST for a busy order is refused at once;
// a GET of it, or a POST for another order, is served meanwhile.
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
	r := chi.NewRouter()
	r.With(perOrder.Wrap).Post("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			close(inside)
			<-finish
		}
		fmt.Fprint(w, perOrder.Key(r)) // the lock this request holds
	})
	r.With(perOrder.Wrap).Get("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, perOrder.Key(r))
	})
	s := httptest.NewServer(r)
	defer s.Close()

	send := func(method, path string) string {
		req, _ := http.NewRequest(method, s.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			return resp.Status + ", Retry-After: " + ra
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + ", " + strings.TrimSpace(string(body))
	}

	first := make(chan string)
	go func() { first <- send("POST", "/orders/1?slow") }()
	<-inside // order 1 is being updated
	fmt.Println("POST order 1 again:", send("POST", "/orders/1"))
	fmt.Println("GET order 1:", send("GET", "/orders/1"))
	fmt.Println("POST order 2:", send("POST", "/orders/2"))
	close(finish)
	fmt.Println("POST order 1:", <-first)
	// Output:
	// POST order 1 again: 409 Conflict, Retry-After: 1
	// GET order 1: 200 OK, http:GET /orders/{id}#id=1
	// POST order 2: 200 OK, http:POST /orders/{id}#id=2
	// POST order 1: 200 OK, http:POST /orders/{id}#id=1
}

// The routes of an inline group, each its own lock: an inline group's Use
// middleware runs after chi matched the route. Routes outside the group
// are not locked.
func Example_group() {
	var locks *lockmw.Client // lockmw.New(rdb)
	m := httpmw.New(locks)
	r := chi.NewRouter()
	// r.Use(m.Wrap) here would run before chi routes: refused with 500.
	r.Group(func(r chi.Router) {
		r.Use(m.Wrap)
		r.Post("/reports", func(w http.ResponseWriter, r *http.Request) { /* ... */ })     // "http:POST /reports"
		r.Put("/reports/{id}", func(w http.ResponseWriter, r *http.Request) { /* ... */ }) // "http:PUT /reports/{id}"
	})
	r.Get("/health", func(w http.ResponseWriter, r *http.Request) { /* ... */ }) // no lock
	_ = http.ListenAndServe(":8080", r)
}

// Under r.Route (or a router given to Mount), lock each route with With, or
// with an inline Group's Use; the key has the whole pattern.
func Example_route() {
	var locks *lockmw.Client // lockmw.New(rdb)
	perOrder := httpmw.New(locks, httpmw.WithPathValues("id"))
	r := chi.NewRouter()
	r.Route("/orders", func(r chi.Router) {
		// r.Use(perOrder.Wrap) here would see the mount's "/orders/*": refused with 500.
		r.Get("/", func(w http.ResponseWriter, r *http.Request) { /* ... */ }) // no lock
		r.With(perOrder.Wrap).Post("/{id}", func(w http.ResponseWriter, r *http.Request) {
			// "http:POST /orders/{id}#id=7" for POST /orders/7
		})
	})
	_ = http.ListenAndServe(":8080", r)
}

// Under WithReadWrite the default key is the route's template without the
// method, so GET /orders/{id} ("http:rw:/orders/{id}#id=7") and an action
// route, POST /orders/{id}/pay ("http:rw:/orders/{id}/pay#id=7"), never
// meet. A WithKey naming the resource joins them: both take the read-write
// lock "http:rw:/orders/{id}#id=7", the GET its read side, the POST its
// write side, which the handlers print.
func Example_readWriteActions() {
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
	r := chi.NewRouter()
	r.With(order.Wrap).Get("/orders/{id}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, order.Key(r)) })
	r.With(order.Wrap).Post("/orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, order.Key(r)) })
	s := httptest.NewServer(r)
	defer s.Close()

	send := func(method, path string) string {
		req, _ := http.NewRequest(method, s.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + ", " + strings.TrimSpace(string(body))
	}
	fmt.Println("GET /orders/7:", send("GET", "/orders/7"))
	fmt.Println("POST /orders/7/pay:", send("POST", "/orders/7/pay"))

	other := lockmw.New(srv.NewClient()) // another instance, writing order 7
	defer other.Close()
	hold, err := other.RWMutex("http:rw:/orders/{id}#id=7").TryLock(context.Background(), 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET /orders/7 beside a write:", send("GET", "/orders/7"))
	fmt.Println("POST /orders/7/pay beside a write:", send("POST", "/orders/7/pay"))
	_ = other.RWMutex("http:rw:/orders/{id}#id=7").Unlock(hold)
	// Output:
	// GET /orders/7: 200 OK, http:rw:/orders/{id}#id=7
	// POST /orders/7/pay: 200 OK, http:rw:/orders/{id}#id=7
	// GET /orders/7 beside a write: 409 Conflict, busy: another request holds this resource; retry later
	// POST /orders/7/pay beside a write: 409 Conflict, busy: another request holds this resource; retry later
}
