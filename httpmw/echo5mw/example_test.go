package echo5mw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/echo5mw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// One request per order at a time, for every route of the Echo; a request
// for a busy order is refused at once, another order is served meanwhile,
// and a path no route matches gets echo's 404.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	e := echo.New()
	e.Use(middleware.Recover())
	// After routing: "http:POST /orders/:id#id=1" for POST /orders/1.
	e.Use(echo5mw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0)))
	inside, finish := make(chan struct{}), make(chan struct{})
	e.POST("/orders/:id", func(c *echo.Context) error {
		if c.QueryParams().Has("slow") {
			close(inside)
			<-finish
		}
		return c.String(http.StatusOK, "order "+c.Param("id")+" updated")
	})
	s := httptest.NewServer(e)
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
	fmt.Println("no route:", post("/invoices/1"))
	close(finish)
	fmt.Println("order 1:", <-first)
	// Output:
	// order 1 again: 409 Conflict, Retry-After: 1
	// order 2: 200 OK
	// no route: 404 Not Found
	// order 1: 200 OK
}

// Per route and per group: only these routes are locked.
func ExampleNew_routesAndGroups() {
	var locks *lockmw.Client // lockmw.New(rdb)
	e := echo.New()

	// One report build at a time: "http:POST /reports".
	e.POST("/reports", func(c *echo.Context) error { /* ... */ return nil },
		echo5mw.New(locks, httpmw.WithWait(30*time.Second)))

	// Every route of the group, per order: "http:PUT /orders/:id#id=7".
	orders := e.Group("/orders")
	orders.Use(echo5mw.New(locks, httpmw.WithPathValues("id")))
	orders.PUT("/:id", func(c *echo.Context) error { /* ... */ return nil })
	orders.DELETE("/:id", func(c *echo.Context) error { /* ... */ return nil })
}

// Under WithReadWrite the default key is the route's template without the
// method, so GET /orders/:id ("http:rw:/orders/:id#id=7") and an action
// route, POST /orders/:id/pay ("http:rw:/orders/:id/pay#id=7"), never meet.
// A WithKey naming the resource joins them: both take the read-write lock
// "http:rw:/orders/:id#id=7", the GET its read side, the POST its write
// side. While another instance writes order 7, both are refused.
func ExampleNew_readWriteActions() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	order := echo5mw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id"), httpmw.WithWait(0),
		httpmw.WithKey(func(*http.Request) string { return "http:/orders/:id" }))
	e := echo.New()
	e.Use(middleware.Recover())
	e.GET("/orders/:id", func(c *echo.Context) error { return c.String(http.StatusOK, "order "+c.Param("id")) }, order)
	e.POST("/orders/:id/pay", func(c *echo.Context) error { return c.String(http.StatusOK, "order "+c.Param("id")+" paid") }, order)
	s := httptest.NewServer(e)
	defer s.Close()

	other := lockmw.New(srv.NewClient()) // another instance, writing order 7
	defer other.Close()
	hold, err := other.RWMutex("http:rw:/orders/:id#id=7").TryLock(context.Background(), 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET /orders/7:", send(s.URL, "GET", "/orders/7"))
	fmt.Println("POST /orders/7/pay:", send(s.URL, "POST", "/orders/7/pay"))
	fmt.Println("GET /orders/8:", send(s.URL, "GET", "/orders/8"))
	_ = other.RWMutex("http:rw:/orders/:id#id=7").Unlock(hold)
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
