package fibermw_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/httpmw/fibermw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) {
	// Two goroutines of fasthttp outlive a shut-down app, by design:
	//   - the worker pool's cleaner sleeps for the pool's idle duration (10s,
	//     fiber leaves fasthttp's default) between checks of its stop
	//     channel (workerpool.go, workerPool.Start);
	//   - the server date refresher runs for the life of the process,
	//     started by the first server (header.go, updateServerDate).
	// Nothing else may leak.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}

// ok is a route's last handler.
func ok(fiber.Ctx) error { return nil }

// newApp is a fiber app whose panics the recover middleware answers with
// 500, as a user's would be.
func newApp() *fiber.App {
	app := fiber.New()
	app.Use(recover.New())
	return app
}

func TestSerializesARouteAcrossInstances(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var g routertest.Gauge
	work := func(fiber.Ctx) error {
		g.Work()
		return nil
	}
	// Two instances: each its own lockmw Client, app and listener. The short
	// watchdog timeout makes waiters also retry every 300ms, as in httpmw's
	// test of the same name (a Client's first waiters can miss a hand-off
	// published before its subscription was confirmed).
	var servers []*server
	for range 2 {
		app := newApp()
		locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(900*time.Millisecond))
		app.Post("/orders/:id", fibermw.New(locks), work)
		servers = append(servers, serve(t, app))
	}

	const n = 16
	replies := make(chan routertest.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Different ids: the lock is per route, not per resource.
			replies <- servers[i%2].send(t.Context(), "POST", "/orders/"+strconv.Itoa(i))
		})
	}
	wg.Wait()
	close(replies)
	for r := range replies {
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}
	peak, all := g.Peak()
	assert.Equal(t, n, all)
	assert.Equal(t, 1, peak, "handlers of one route ran concurrently")
}

func TestPerResource(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	t.Run("different resources run in parallel", func(t *testing.T) {
		app := newApp()
		app.Post("/orders/:id", fibermw.New(locks, fibermw.WithParams("id")), barrier(2))
		s := serve(t, app)
		r1, r2 := s.sendAsync(t.Context(), "POST", "/orders/1"), s.sendAsync(t.Context(), "POST", "/orders/2")
		routertest.AllOK(t, r1, r2)
	})

	t.Run("the same resource waits its turn", func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		log := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
		entered, release := make(chan struct{}, 2), make(chan struct{})
		finish := sync.OnceFunc(func() { close(release) })
		defer finish() // also when the test fails: the shutdown waits for the handlers
		app := newApp()
		app.Post("/orders/:id", fibermw.New(locks, fibermw.WithParams("id")), func(c fiber.Ctx) error {
			n := c.Query("n")
			log("enter " + n)
			entered <- struct{}{}
			<-release
			log("exit " + n)
			return nil
		})
		s := serve(t, app)
		first := s.sendAsync(t.Context(), "POST", "/orders/1?n=1")
		testsupport.Recv(t, entered, routertest.Patience, "first request entering")
		second := s.sendAsync(t.Context(), "POST", "/orders/1?n=2")
		testsupport.Eventually(t, routertest.Patience, "second request queued", func() bool {
			return locktest.Queued(t, locks.Redis(), "http:POST /orders/:id#id=1") == 1
		})
		select {
		case <-entered:
			t.Fatal("the second request entered while the first held the resource")
		default:
		}
		finish()
		routertest.AllOK(t, first, second)
		assert.Equal(t, []string{"enter 1", "exit 1", "enter 2", "exit 2"}, events)
	})
}

func TestWithPermitsRunsThatManyAtOnce(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	app := newApp()
	app.Post("/exports", fibermw.New(locks, fibermw.WithPermits(2)), barrier(2))
	s := serve(t, app)
	r1, r2 := s.sendAsync(t.Context(), "POST", "/exports"), s.sendAsync(t.Context(), "POST", "/exports")
	routertest.AllOK(t, r1, r2)
}

// Each way of registering a route gives the route's method and full path
// as the key: a request is refused while another owner holds that name.
func TestKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	mw := func(opts ...fibermw.Option) fiber.Handler {
		return fibermw.New(locks, append([]fibermw.Option{fibermw.WithWait(0)}, opts...)...)
	}
	tests := []struct {
		name         string
		register     func(app *fiber.App)
		method, path string
		header       []string
		key          string
	}{
		{"a route", func(app *fiber.App) { app.Post("/orders/:id", mw(), ok) },
			"POST", "/orders/7", nil, "http:POST /orders/:id"},
		{"a route of a group has the group's prefix", func(app *fiber.App) { app.Group("/api").Post("/orders/:id", mw(), ok) },
			"POST", "/api/orders/7", nil, "http:POST /api/orders/:id"},
		{"a route of a nested group", func(app *fiber.App) { app.Group("/api").Group("/v2").Delete("/orders/:id", mw(), ok) },
			"DELETE", "/api/v2/orders/7", nil, "http:DELETE /api/v2/orders/:id"},
		{"a route of a RouteChain", func(app *fiber.App) { app.RouteChain("/chain/:id").Get(mw(), ok) },
			"GET", "/chain/1", nil, "http:GET /chain/:id"},
		{"a route of a mounted app has the mount's prefix", func(app *fiber.App) {
			sub := fiber.New()
			sub.Put("/items/:id", mw(), ok)
			app.Use("/sub", sub)
		}, "PUT", "/sub/items/3", nil, "http:PUT /sub/items/:id"},
		{"a wildcard route", func(app *fiber.App) { app.Get("/files/*", mw(), ok) },
			"GET", "/files/a/b", nil, "http:GET /files/*"},
		{"a route with a constraint", func(app *fiber.App) { app.Get("/n/:id<int>", mw(), ok) },
			"GET", "/n/5", nil, "http:GET /n/:id<int>"},
		{"a case-insensitive match locks the route as registered", func(app *fiber.App) { app.Get("/Reports", mw(), ok) },
			"GET", "/REPORTS", nil, "http:GET /Reports"},
		{"the HEAD route fiber adds for a GET route locks HEAD", func(app *fiber.App) { app.Get("/h", mw(), ok) },
			"HEAD", "/h", nil, "http:HEAD /h"},
		{"app.All locks each method on its own", func(app *fiber.App) { app.All("/any", mw(), ok) },
			"PATCH", "/any", nil, "http:PATCH /any"},
		{"WithParams appends the parameters", func(app *fiber.App) { app.Post("/p/:tenant/:id", mw(fibermw.WithParams("id", "tenant")), ok) },
			"POST", "/p/acme/7", nil, "http:POST /p/:tenant/:id#id=7&tenant=acme"},
		{"WithParams escapes the values", func(app *fiber.App) { app.Post("/q/:id", mw(fibermw.WithParams("id")), ok) },
			"POST", "/q/a&b=c", nil, "http:POST /q/:id#id=a%26b%3Dc"},
		{"WithKey sees the fiber.Ctx", func(app *fiber.App) {
			app.Post("/k", mw(fibermw.WithKey(func(c fiber.Ctx) string { return c.Get("X-Tenant") })), ok)
		}, "POST", "/k", []string{"X-Tenant: acme"}, "acme"},
		{"WithKey and WithParams", func(app *fiber.App) {
			app.Post("/kp/:id", mw(fibermw.WithKey(func(fiber.Ctx) string { return "orders" }), fibermw.WithParams("id")), ok)
		}, "POST", "/kp/9", nil, "orders#id=9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := newApp()
			tt.register(app)
			s := serve(t, app)
			release := locktest.Hold(t, other, tt.key, 0)
			r := s.send(t.Context(), tt.method, tt.path, tt.header...)
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusConflict, r.Status, "the request did not take %q: %s", tt.key, r.Body)
			release()
			assert.Equal(t, http.StatusOK, s.status(t, tt.method, tt.path, tt.header...))
		})
	}

	t.Run("an empty WithKey name runs the request unlocked", func(t *testing.T) {
		var ran atomic.Bool
		app := newApp()
		app.Get("/free", mw(fibermw.WithKey(func(fiber.Ctx) string { return "" })), func(fiber.Ctx) error { ran.Store(true); return nil })
		assert.Equal(t, http.StatusOK, serve(t, app).status(t, "GET", "/free"))
		assert.True(t, ran.Load())
	})
}

// Requests that match no route never reach a route's handler: the app's
// 404 and 405 answer them, unlocked.
func TestUnmatchedRequestsPassThrough(t *testing.T) {
	t.Parallel()
	var acquisitions atomic.Int64
	locks := locktest.NewOn(t, redistest.Start(t), lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			acquisitions.Add(1)
			return nil
		},
	}))
	app := newApp()
	app.Post("/orders/:id", fibermw.New(locks), ok)
	app.Get("/free", ok)
	s := serve(t, app)

	assert.Equal(t, http.StatusNotFound, s.status(t, "GET", "/nowhere"))
	assert.Equal(t, http.StatusMethodNotAllowed, s.status(t, "GET", "/orders/7"))
	assert.Equal(t, http.StatusOK, s.status(t, "GET", "/free"))
	assert.Zero(t, acquisitions.Load(), "a request without a locked route took a lock")
	assert.Equal(t, http.StatusOK, s.status(t, "POST", "/orders/7"))
	assert.NotZero(t, acquisitions.Load(), "the locked route took no lock")
}

func TestBusy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	tests := []struct {
		name       string
		opts       []fibermw.Option
		wantStatus int
		wantRetry  []string      // any of
		minWait    time.Duration // the request waits at least this long
	}{
		{"WithWait(0) rejects at once with the defaults", []fibermw.Option{fibermw.WithWait(0)}, 409, []string{"1"}, 0},
		{"the status and the hint are configurable", []fibermw.Option{fibermw.WithWait(0), fibermw.WithBusyStatus(429), fibermw.WithRetryAfter(2500 * time.Millisecond)}, 429, []string{"3"}, 0},
		{"a short wait ends busy", []fibermw.Option{fibermw.WithWait(150 * time.Millisecond)}, 409, []string{"1"}, 150 * time.Millisecond},
		{"with WithLease a leased holder gives its remaining lease", []fibermw.Option{fibermw.WithWait(0), fibermw.WithLease(time.Minute)}, 409, []string{"29", "30"}, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := "/r" + strconv.Itoa(i)
			var ran atomic.Bool
			type seen struct {
				err    error
				status int
			}
			outer := make(chan seen, 2)
			app := newApp()
			app.Get(route, func(c fiber.Ctx) error {
				err := c.Next()
				outer <- seen{err, c.Response().StatusCode()}
				return err
			}, fibermw.New(locks, tt.opts...), func(fiber.Ctx) error { ran.Store(true); return nil })
			s := serve(t, app)
			release := locktest.Hold(t, other, "http:GET "+route, 0) // a watchdog holder: its TTL is 30s

			start := time.Now()
			r := s.send(t.Context(), "GET", route)
			elapsed := time.Since(start)
			require.NoError(t, r.Err)
			assert.Equal(t, tt.wantStatus, r.Status)
			assert.Contains(t, tt.wantRetry, r.Header.Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
			assert.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
			assert.Equal(t, "busy: another request holds this resource; retry later\n", r.Body)
			assert.False(t, ran.Load(), "the handler ran without the lock")
			assert.GreaterOrEqual(t, elapsed, tt.minWait, "rejected before the wait ended")
			assert.Equal(t, seen{nil, tt.wantStatus}, testsupport.Recv(t, outer, routertest.Patience, "the outer middleware"),
				"the chain ends with a written answer and no error")

			release()
			assert.Equal(t, http.StatusOK, s.status(t, "GET", route))
			assert.True(t, ran.Load())
		})
	}
}

// An error of the handler goes back up the chain to fiber's error handler,
// after the lock is released.
func TestTheHandlersErrorIsReturned(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	app := newApp()
	app.Get("/teapot", fibermw.New(locks, fibermw.WithWait(0)), func(fiber.Ctx) error {
		return fiber.NewError(fiber.StatusTeapot, "short and stout")
	})
	s := serve(t, app)
	r := s.send(t.Context(), "GET", "/teapot")
	require.NoError(t, r.Err)
	assert.Equal(t, fiber.StatusTeapot, r.Status)
	assert.Equal(t, "short and stout", r.Body)
	assert.False(t, locktest.IsLocked(t, locks, "http:GET /teapot"))
}

func TestPanicInTheHandlerReleasesTheLock(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	app := newApp() // its recover middleware answers the panic with 500
	app.Get("/boom", fibermw.New(locks, fibermw.WithWait(0)), func(c fiber.Ctx) error {
		if c.RequestCtx().QueryArgs().Has("panic") {
			panic("boom")
		}
		return nil
	})
	s := serve(t, app)
	r := s.send(t.Context(), "GET", "/boom?panic")
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusInternalServerError, r.Status)
	assert.Equal(t, "boom", r.Body, "fiber's error handler answers the recovered panic")
	assert.False(t, locktest.IsLocked(t, locks, "http:GET /boom"), "the lock outlived the panic")
	assert.Equal(t, http.StatusOK, s.status(t, "GET", "/boom"))
}

func TestTheHandlerRunsWithTheHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	const key = "http:GET /held"

	t.Run("c.Context holds the lock, a nested handler re-enters, the context is put back", func(t *testing.T) {
		restored := make(chan bool, 1)
		app := newApp()
		app.Get("/held", func(c fiber.Ctx) error {
			before := c.Context()
			err := c.Next()
			restored <- c.Context() == before
			return err
		}, fibermw.New(locks, fibermw.WithWait(0)), func(c fiber.Ctx) error {
			held, err := locks.Mutex(key).IsHeld(c.Context())
			assert.NoError(t, err)
			assert.True(t, held, "c.Context() is not the hold")
			return c.Next()
		}, fibermw.New(locks, fibermw.WithWait(0)), func(c fiber.Ctx) error {
			n, err := locks.Mutex(key).HoldCount(c.Context())
			assert.NoError(t, err)
			assert.Equal(t, 2, n, "the nested handler did not re-enter")
			return nil
		})
		r := serve(t, app).send(t.Context(), "GET", "/held")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
		assert.True(t, testsupport.Recv(t, restored, routertest.Patience, "the outer middleware"), "c.Context() was not put back")
	})

	t.Run("a lost lock cancels c.Context with ErrLockLost", func(t *testing.T) {
		causes := make(chan error, 1)
		entered := make(chan struct{})
		app := newApp()
		app.Get("/held", fibermw.New(locks, fibermw.WithWait(0)), func(c fiber.Ctx) error {
			close(entered)
			select {
			case <-c.Context().Done():
				causes <- context.Cause(c.Context())
			case <-time.After(routertest.Patience):
				causes <- errors.New("c.Context() not cancelled")
			}
			return nil
		})
		got := serve(t, app).sendAsync(t.Context(), "GET", "/held")
		testsupport.Recv(t, entered, routertest.Patience, "handler entering")
		_, err := locks.Mutex(key).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.ErrorIs(t, testsupport.Recv(t, causes, routertest.Patience, "cause"), lockmw.ErrLockLost)
		testsupport.Recv(t, got, routertest.Patience, "reply")
	})

	t.Run("a deadline an earlier middleware puts on c.Context ends the wait", func(t *testing.T) {
		locktest.Hold(t, locktest.NewOn(t, srv), "http:GET /deadline", 0)
		app := newApp()
		app.Get("/deadline", func(c fiber.Ctx) error {
			ctx, cancel := context.WithTimeout(c.Context(), 100*time.Millisecond)
			defer cancel()
			c.SetContext(ctx)
			return c.Next()
		}, fibermw.New(locks), func(fiber.Ctx) error {
			t.Error("the handler ran without the lock")
			return nil
		})
		r := serve(t, app).send(t.Context(), "GET", "/deadline")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusServiceUnavailable, r.Status)
		assert.Equal(t, "request ended while waiting for its turn\n", r.Body)
	})
}

// fasthttp does not tell a handler that its client went away: a waiting
// request stays in the lock's queue and, if its turn comes within its wait,
// runs its handler for no one.
func TestAClientThatGoesAwayKeepsItsTurn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	ran := make(chan struct{})
	app := newApp()
	app.Post("/slow", fibermw.New(locks, fibermw.WithWait(time.Minute)), func(fiber.Ctx) error {
		close(ran)
		return nil
	})
	s := serve(t, app)
	release := locktest.Hold(t, locktest.NewOn(t, srv), "http:POST /slow", 0)

	ctx, cancel := context.WithCancel(t.Context())
	got := s.sendAsync(ctx, "POST", "/slow")
	testsupport.Eventually(t, routertest.Patience, "request queued", func() bool { return locktest.Queued(t, locks.Redis(), "http:POST /slow") == 1 })
	cancel()
	assert.ErrorIs(t, testsupport.Recv(t, got, routertest.Patience, "client").Err, context.Canceled)
	assert.EqualValues(t, 1, locktest.Queued(t, locks.Redis(), "http:POST /slow"), "the waiter left with its client")
	release()
	testsupport.Recv(t, ran, routertest.Patience, "the handler of the gone client running")
}

// Registered with Use, the handler does not know the route: it refuses
// every request with 500, and logs once, rather than run it unlocked.
func TestUnderUseIsRefusedLoudly(t *testing.T) {
	t.Parallel()
	locks := locktest.NewOn(t, redistest.Start(t))
	tests := []struct {
		name     string
		register func(app *fiber.App, mw fiber.Handler, h fiber.Handler)
	}{
		{"app.Use", func(app *fiber.App, mw, h fiber.Handler) {
			app.Use(mw)
			app.Post("/orders/:id", h)
		}},
		{"app.Use with a prefix", func(app *fiber.App, mw, h fiber.Handler) {
			app.Use("/orders", mw)
			app.Post("/orders/:id", h)
		}},
		{"a Group's handlers", func(app *fiber.App, mw, h fiber.Handler) {
			app.Group("/orders", mw).Post("/:id", h)
		}},
		{"a Group's Use", func(app *fiber.App, mw, h fiber.Handler) {
			g := app.Group("/orders")
			g.Use(mw)
			g.Post("/:id", h)
		}},
		{"a RouteChain's All", func(app *fiber.App, mw, h fiber.Handler) {
			app.RouteChain("/orders/:id").All(mw).Post(h)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log testsupport.LogBuffer
			var ran atomic.Int64
			app := newApp()
			tt.register(app, fibermw.New(locks, fibermw.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))),
				func(fiber.Ctx) error { ran.Add(1); return nil })
			s := serve(t, app)
			for range 3 {
				r := s.send(t.Context(), "POST", "/orders/7")
				require.NoError(t, r.Err)
				assert.Equal(t, http.StatusInternalServerError, r.Status)
				assert.Equal(t, "server misconfigured: the lock middleware runs where no route is known; see the server log\n", r.Body)
				assert.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
			}
			assert.Zero(t, ran.Load(), "the handler ran unlocked")
			assert.Equal(t, 1, strings.Count(log.String(), "\n"), "logged once per handler: %s", log.String())
			assert.Contains(t, log.String(), "registered with Use")
			assert.Contains(t, log.String(), "app.Post(path, fibermw.New(locks), handler)")
			assert.Contains(t, log.String(), "path=/orders/7")
		})
	}

	t.Run("a path that no route matches is refused too", func(t *testing.T) {
		app := newApp()
		app.Use(fibermw.New(locks, fibermw.WithLogger(slog.New(slog.DiscardHandler))))
		assert.Equal(t, http.StatusInternalServerError, serve(t, app).status(t, "GET", "/nowhere"),
			"under Use the handler cannot tell a request that a later route would match")
	})
}

// The refusal under Use goes to slog.Default() when no WithLogger is given.
// Not parallel: it replaces the default logger while it runs.
func TestMisplacedLogsToSlogDefault(t *testing.T) {
	var log testsupport.LogBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	defer slog.SetDefault(prev)
	mw := fibermw.New(neverDialled(t)) // slog.Default() at the time of New
	slog.SetDefault(prev)

	app := fiber.New()
	app.Use(mw)
	assert.Equal(t, http.StatusInternalServerError, serve(t, app).status(t, "GET", "/x"))
	assert.Contains(t, log.String(), "fibermw's handler got a request before any route matched")
}
