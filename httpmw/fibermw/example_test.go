package fibermw_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/go-rlock/rlock/httpmw/fibermw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// One request per order at a time, across instances: while another
// instance updates order 1, a request for it is refused at once, and
// order 2 is served meanwhile.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	app := fiber.New()
	app.Use(recover.New())
	app.Post("/orders/:id", fibermw.New(locks, fibermw.WithParams("id"), fibermw.WithWait(0)), func(c fiber.Ctx) error {
		return c.SendString("order " + c.Params("id") + " updated")
	})

	post := func(path string) string {
		resp, err := app.Test(httptest.NewRequest("POST", path, nil), fiber.TestConfig{Timeout: 0})
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			return resp.Status + ", Retry-After: " + ra
		}
		return resp.Status
	}

	// Another instance holds order 1's lock: the name the route's requests take.
	other := lockmw.New(srv.NewClient())
	defer other.Close()
	order1 := other.Mutex("http:POST /orders/:id#id=1")
	hold, err := order1.TryLock(context.Background(), 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("order 1:", post("/orders/1"))
	fmt.Println("order 2:", post("/orders/2"))
	_ = order1.Unlock(hold)
	fmt.Println("order 1 again:", post("/orders/1"))
	// Output:
	// order 1: 409 Conflict, Retry-After: 1
	// order 2: 200 OK
	// order 1 again: 200 OK
}

// Per route, never with Use: fiber's Use handlers run before the route is
// known, and there the handler refuses every request with 500.
func ExampleNew() {
	var locks *lockmw.Client // lockmw.New(rdb)
	app := fiber.New()
	app.Use(recover.New())

	// "http:POST /reports": one report at a time, waiting up to 30s.
	app.Post("/reports", fibermw.New(locks, fibermw.WithWait(30*time.Second)), func(c fiber.Ctx) error {
		// c.Context() is the hold: it ends if the lock is lost.
		return buildReport(c.Context())
	})

	// A group's routes: "http:PUT /api/orders/:id#id=7".
	api := app.Group("/api")
	api.Put("/orders/:id", fibermw.New(locks, fibermw.WithParams("id")), func(c fiber.Ctx) error { return nil })

	// Not app.Use(fibermw.New(locks)), nor app.Group("/api", fibermw.New(locks)).
	_ = app.Listen(":8080")
}

func buildReport(context.Context) error { return nil }

// A key of one's own, from the fiber.Ctx: one lock per tenant, whatever the
// route; requests without a tenant are not locked.
func ExampleWithKey() {
	var locks *lockmw.Client // lockmw.New(rdb)
	perTenant := fibermw.New(locks, fibermw.WithKey(func(c fiber.Ctx) string {
		if t := c.Get("X-Tenant"); t != "" {
			return "tenant:" + t
		}
		return ""
	}))
	app := fiber.New()
	app.Post("/imports", perTenant, func(c fiber.Ctx) error { return nil })
}

// At most three exports per tenant at once, across every instance; a fourth
// waits up to 5s for a permit, then gets 429 Too Many Requests.
func ExampleWithPermits() {
	var locks *lockmw.Client // lockmw.New(rdb)
	exports := fibermw.New(locks, fibermw.WithParams("tenant"), fibermw.WithPermits(3),
		fibermw.WithWait(5*time.Second), fibermw.WithBusyStatus(fiber.StatusTooManyRequests))
	app := fiber.New()
	// Each tenant's semaphore is "http:limit:POST /tenants/:tenant/exports#tenant=<tenant>".
	app.Post("/tenants/:tenant/exports", exports, func(c fiber.Ctx) error { return nil })
}

// Under WithReadWrite the default key is the route's template without the
// method, so GET /orders/:id ("http:rw:/orders/:id#id=7") and an action
// route, POST /orders/:id/pay ("http:rw:/orders/:id/pay#id=7"), never meet.
// A WithKey naming the resource joins them: both take the read-write lock
// "http:rw:/orders/:id#id=7", the GET its read side, the POST its write
// side. While another instance writes order 7, both are refused.
func ExampleWithReadWrite_actions() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	order := fibermw.New(locks, fibermw.WithReadWrite(), fibermw.WithParams("id"), fibermw.WithWait(0),
		fibermw.WithKey(func(fiber.Ctx) string { return "http:/orders/:id" }))
	app := fiber.New()
	app.Use(recover.New())
	app.Get("/orders/:id", order, func(c fiber.Ctx) error { return c.SendString("order " + c.Params("id")) })
	app.Post("/orders/:id/pay", order, func(c fiber.Ctx) error { return c.SendString("order " + c.Params("id") + " paid") })
	send := func(method, path string) string {
		resp, err := app.Test(httptest.NewRequest(method, path, nil), fiber.TestConfig{Timeout: 0})
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		return resp.Status
	}

	other := lockmw.New(srv.NewClient()) // another instance, writing order 7
	defer other.Close()
	hold, err := other.RWMutex("http:rw:/orders/:id#id=7").TryLock(context.Background(), 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET /orders/7:", send("GET", "/orders/7"))
	fmt.Println("POST /orders/7/pay:", send("POST", "/orders/7/pay"))
	fmt.Println("GET /orders/8:", send("GET", "/orders/8"))
	_ = other.RWMutex("http:rw:/orders/:id#id=7").Unlock(hold)
	fmt.Println("POST /orders/7/pay:", send("POST", "/orders/7/pay"))
	// Output:
	// GET /orders/7: 409 Conflict
	// POST /orders/7/pay: 409 Conflict
	// GET /orders/8: 200 OK
	// POST /orders/7/pay: 200 OK
}
