package gorilla_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gorilla/mux"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// routePattern gives httpmw what gorilla/mux keeps in the request's
// context: r.Pattern, the matched route's template (host, then path), and
// the route's variables as path values. Mount it right before m.Wrap. Where
// no route with a path template is known it leaves r.Pattern empty, and
// m.Wrap refuses the request (500, logged) rather than run it unlocked.
func routePattern(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context()) // a copy whose path values are its own: the caller's request is left as it was
		r.Pattern = ""
		if route := mux.CurrentRoute(r); route != nil {
			if path, err := route.GetPathTemplate(); err == nil {
				host, _ := route.GetHostTemplate() // "" without a Host matcher
				r.Pattern = host + path
			}
		}
		for name, value := range mux.Vars(r) {
			r.SetPathValue(name, value)
		}
		next.ServeHTTP(w, r)
	})
}

// One request per order at a time, per method: gorilla/mux runs Use
// middleware once the route has matched, and routePattern hands httpmw the
// route's template and variables. A second POST for a busy order is
// refused at once; a GET of it, or a POST for another order, is served
// meanwhile.
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
	router := mux.NewRouter()
	router.Use(routePattern, perOrder.Wrap)
	router.HandleFunc("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			close(inside)
			<-finish
		}
		fmt.Fprint(w, perOrder.Key(r)) // the lock this request holds
	}).Methods("GET", "POST")
	s := httptest.NewServer(router)
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
	fmt.Println("no such route:", send("POST", "/nowhere"))
	close(finish)
	fmt.Println("POST order 1:", <-first)
	// Output:
	// POST order 1 again: 409 Conflict, Retry-After: 1
	// GET order 1: 200 OK, http:GET /orders/{id}#id=1
	// POST order 2: 200 OK, http:POST /orders/{id}#id=2
	// no such route: 404 Not Found, 404 page not found
	// POST order 1: 200 OK, http:POST /orders/{id}#id=1
}

// The routes of a subrouter: its Use middleware, too, runs once a route
// has matched; the template includes the prefix.
func Example_subrouter() {
	var locks *lockmw.Client // lockmw.New(rdb)
	m := httpmw.New(locks)
	router := mux.NewRouter()
	router.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { /* ... */ }) // no lock
	api := router.PathPrefix("/api").Subrouter()
	api.Use(routePattern, m.Wrap)
	api.HandleFunc("/reports", func(w http.ResponseWriter, r *http.Request) { /* ... */ }).Methods("POST") // "http:POST /api/reports"
	_ = http.ListenAndServe(":8080", router)
}

// One route only: wrap its handler.
func Example_route() {
	var locks *lockmw.Client // lockmw.New(rdb)
	m := httpmw.New(locks)
	router := mux.NewRouter()
	reports := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { /* ... */ })
	router.Handle("/reports", routePattern(m.Wrap(reports))).Methods("POST") // "http:POST /reports"
	_ = http.ListenAndServe(":8080", router)
}
