package ginmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/ginmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// One request per order at a time, for every route of the engine; a
// request for a busy order is refused at once, another order is served
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

	r := gin.New()
	// Before the routes: gin copies the middleware into each route as it is registered.
	r.Use(gin.Recovery(), ginmw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0)))
	inside, finish := make(chan struct{}), make(chan struct{})
	r.POST("/orders/:id", func(c *gin.Context) { // locks "http:POST /orders/:id#id=<id>"
		if _, slow := c.GetQuery("slow"); slow {
			close(inside)
			<-finish
		}
		c.String(http.StatusOK, "order %s updated\n", c.Param("id"))
	})
	s := httptest.NewServer(r)
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
	fmt.Println("no such route:", post("/nowhere"))
	close(finish)
	fmt.Println("order 1:", <-first)
	// Output:
	// order 1 again: 409 Conflict, Retry-After: 1
	// order 2: 200 OK
	// no such route: 404 Not Found
	// order 1: 200 OK
}

// Per route and per group: only these routes are locked.
func ExampleNew_perRoute() {
	var locks *lockmw.Client // lockmw.New(rdb)
	r := gin.New()
	r.Use(gin.Recovery())

	// One route: "http:POST /reports".
	r.POST("/reports", ginmw.New(locks), func(c *gin.Context) { /* ... */ })

	// A group, one lock per order: "http:PUT /orders/:id#id=7".
	orders := r.Group("/orders", ginmw.New(locks, httpmw.WithPathValues("id")))
	orders.PUT("/:id", func(c *gin.Context) { /* ... */ })
	orders.DELETE("/:id", func(c *gin.Context) { /* ... */ })

	r.GET("/health", func(c *gin.Context) { /* not locked */ })
	_ = r.Run(":8080")
}

// Handlers that pass c itself as a context.Context see the hold context
// only with ContextWithFallback.
func ExampleNew_contextWithFallback() {
	var locks *lockmw.Client // lockmw.New(rdb)
	r := gin.New()
	// Without it, c.Done() and c.Value() do not reach c.Request.Context():
	// c would carry neither the hold nor its cancellation.
	r.ContextWithFallback = true
	r.Use(gin.Recovery(), ginmw.New(locks))
	r.POST("/reports", func(c *gin.Context) {
		// c.Request.Context() is the hold context; with the fallback so is c:
		// it is cancelled, with cause lockmw.ErrLockLost, if the lock is lost.
		held, err := locks.Mutex("http:POST /reports").IsHeld(c)
		_, _ = held, err // true, nil
	})
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

	order := ginmw.New(locks, httpmw.WithReadWrite(), httpmw.WithPathValues("id"), httpmw.WithWait(0),
		httpmw.WithKey(func(*http.Request) string { return "http:/orders/:id" }))
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/orders/:id", order, func(c *gin.Context) { c.String(http.StatusOK, "order %s\n", c.Param("id")) })
	r.POST("/orders/:id/pay", order, func(c *gin.Context) { c.String(http.StatusOK, "order %s paid\n", c.Param("id")) })
	s := httptest.NewServer(r)
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
