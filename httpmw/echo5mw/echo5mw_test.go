package echo5mw_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/echo5mw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestSerializesARouteAcrossInstances(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var g routertest.Gauge
	work := func(c *echo.Context) error {
		g.Work()
		return c.NoContent(http.StatusOK)
	}
	// Two instances: each its own lockmw Client, Echo and server. The short
	// watchdog timeout makes waiters also retry every 300ms, as in httpmw's
	// test of the same name.
	var servers []*httptest.Server
	for range 2 {
		e := newEcho()
		e.Use(echo5mw.New(locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(900*time.Millisecond))))
		e.POST("/orders/:id", work)
		servers = append(servers, routertest.Serve(t, e))
	}

	const n = 16
	replies := make(chan routertest.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Different ids: the lock is per route, not per resource.
			replies <- routertest.Send(t.Context(), servers[i%2], "POST", "/orders/"+strconv.Itoa(i))
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

// registration mounts h for "POST /orders/:id" with the middlewares mws in
// one of the three ways echo offers.
type registration struct {
	name  string
	mount func(e *echo.Echo, h echo.HandlerFunc, mws ...echo.MiddlewareFunc)
}

var registrations = []registration{
	{"globally with e.Use", func(e *echo.Echo, h echo.HandlerFunc, mws ...echo.MiddlewareFunc) {
		e.Use(mws...)
		e.POST("/orders/:id", h)
	}},
	{"per route", func(e *echo.Echo, h echo.HandlerFunc, mws ...echo.MiddlewareFunc) {
		e.POST("/orders/:id", h, mws...)
	}},
	{"per group", func(e *echo.Echo, h echo.HandlerFunc, mws ...echo.MiddlewareFunc) {
		e.Group("/orders", mws...).POST("/:id", h)
	}},
}

// A busy answer is httpmw's, written by the middleware, which returns nil:
// nothing after it runs and echo's error handler does not write again.
func TestBusyEndsTheChain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	for _, reg := range registrations {
		t.Run("registered "+reg.name, func(t *testing.T) {
			var ran, after, handled atomic.Int32
			returned := make(chan error, 1)
			e := newEcho()
			e.HTTPErrorHandler = func(c *echo.Context, err error) {
				handled.Add(1)
				echo.DefaultHTTPErrorHandler(false)(c, err)
			}
			e.Use(func(next echo.HandlerFunc) echo.HandlerFunc { // outermost: sees what the chain returns
				return func(c *echo.Context) error {
					err := next(c)
					returned <- err
					return err
				}
			})
			afterMW := func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c *echo.Context) error { after.Add(1); return next(c) }
			}
			mw := echo5mw.New(locks, httpmw.WithWait(0), httpmw.WithRetryAfter(2*time.Second))
			reg.mount(e, func(c *echo.Context) error { ran.Add(1); return c.String(http.StatusOK, "done") }, mw, afterMW)
			s := routertest.Serve(t, e)
			release := locktest.Hold(t, other, "http:POST /orders/:id", 0)

			r := routertest.Send(t.Context(), s, "POST", "/orders/7")
			require.NoError(t, r.Err)
			assert.Equal(t, http.StatusConflict, r.Status)
			assert.Equal(t, "2", r.Header.Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
			assert.Contains(t, r.Body, "busy")
			assert.NoError(t, testsupport.Recv(t, returned, routertest.Patience, "the chain's result"))
			assert.Zero(t, ran.Load(), "the handler ran without the lock")
			assert.Zero(t, after.Load(), "the chain went on after a busy answer")
			assert.Zero(t, handled.Load(), "echo's error handler was called for a busy answer")

			release()
			r = routertest.Send(t.Context(), s, "POST", "/orders/7")
			assert.Equal(t, http.StatusOK, r.Status, "after release: %s", r.Body)
			assert.Equal(t, "done", r.Body)
			assert.NoError(t, testsupport.Recv(t, returned, routertest.Patience, "the chain's result"))
			assert.Equal(t, int32(1), ran.Load())
			assert.Equal(t, int32(1), after.Load())
		})
	}
}

func TestPerResource(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	for _, reg := range registrations {
		t.Run("registered "+reg.name, func(t *testing.T) {
			t.Run("different resources run in parallel", func(t *testing.T) {
				e := newEcho()
				reg.mount(e, barrier(2), echo5mw.New(locks, httpmw.WithPathValues("id")))
				s := routertest.Serve(t, e)
				r1, r2 := routertest.SendAsync(t.Context(), s, "POST", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/2")
				routertest.AllOK(t, r1, r2)
			})

			t.Run("the key has echo's template and c.Param", func(t *testing.T) {
				e := newEcho()
				reg.mount(e, func(c *echo.Context) error { return c.String(http.StatusOK, c.Param("id")) },
					echo5mw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0)))
				s := routertest.Serve(t, e)
				release := locktest.Hold(t, other, "http:POST /orders/:id#id=a+b", 0) // url.QueryEscape("a b")
				assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "POST", "/orders/a%20b").Status)
				r := routertest.Send(t.Context(), s, "POST", "/orders/2")
				assert.Equal(t, http.StatusOK, r.Status)
				assert.Equal(t, "2", r.Body)
				release()
				assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/a%20b").Status)
			})
		})
	}

	t.Run("the same resource waits its turn", func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		log := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
		entered, release := make(chan struct{}, 2), make(chan struct{})
		finish := sync.OnceFunc(func() { close(release) })
		defer finish() // also when the test fails: the server waits for its handlers
		e := newEcho()
		e.Use(echo5mw.New(locks, httpmw.WithPathValues("id")))
		e.POST("/orders/:id", func(c *echo.Context) error {
			log("enter " + c.QueryParam("n"))
			entered <- struct{}{}
			<-release
			log("exit " + c.QueryParam("n"))
			return nil
		})
		s := routertest.Serve(t, e)
		first := routertest.SendAsync(t.Context(), s, "POST", "/orders/1?n=1")
		testsupport.Recv(t, entered, routertest.Patience, "first request entering")
		second := routertest.SendAsync(t.Context(), s, "POST", "/orders/1?n=2")
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

// echo's "*" routes are routes, not mounts: "GET /files/*" is locked.
func TestAWildcardRouteIsLocked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	e := newEcho()
	e.Use(echo5mw.New(locks, httpmw.WithWait(0)))
	e.GET("/files/*", func(c *echo.Context) error { return c.String(http.StatusOK, c.Param("*")) })
	s := routertest.Serve(t, e)
	release := locktest.Hold(t, locktest.NewOn(t, srv), "http:GET /files/*", 0)
	assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "GET", "/files/a/b").Status)
	release()
	r := routertest.Send(t.Context(), s, "GET", "/files/a/b")
	assert.Equal(t, http.StatusOK, r.Status, r.Body)
	assert.Equal(t, "a/b", r.Body)
}

func TestPanicInTheHandlerReleasesTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	e := newEcho()
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true}))
	e.Use(echo5mw.New(locks, httpmw.WithWait(0)))
	e.GET("/boom", func(c *echo.Context) error {
		if c.QueryParams().Has("panic") {
			panic("boom")
		}
		return c.NoContent(http.StatusOK)
	})
	s := routertest.Serve(t, e)
	r := routertest.Send(t.Context(), s, "GET", "/boom?panic")
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, "middleware.Recover answers")
	assert.False(t, locktest.IsLocked(t, locks, "http:GET /boom"), "the lock outlived the panic")
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/boom").Status)
}

// The handler's error comes back unchanged, after the lock was released:
// echo's HTTPErrorHandler answers it without the lock.
func TestTheHandlersErrorIsReturnedAfterTheRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	errTeapot := echo.NewHTTPError(http.StatusTeapot, "short and stout")
	type seen struct {
		err       error
		locked    bool
		lockedErr error
	}
	handled := make(chan seen, 1)
	e := newEcho()
	e.HTTPErrorHandler = func(c *echo.Context, err error) {
		locked, lockedErr := locks.Mutex("http:GET /tea").IsLocked(context.Background())
		handled <- seen{err, locked, lockedErr}
		echo.DefaultHTTPErrorHandler(false)(c, err)
	}
	e.Use(echo5mw.New(locks))
	e.GET("/tea", func(c *echo.Context) error {
		held, err := locks.Mutex("http:GET /tea").IsHeld(c.Request().Context())
		if err != nil || !held {
			return errors.New("the handler runs without the lock")
		}
		return errTeapot
	})
	s := routertest.Serve(t, e)
	r := routertest.Send(t.Context(), s, "GET", "/tea")
	require.NoError(t, r.Err)
	assert.Equal(t, http.StatusTeapot, r.Status, r.Body)
	got := testsupport.Recv(t, handled, routertest.Patience, "the error handler's call")
	assert.Same(t, errTeapot, got.err)
	require.NoError(t, got.lockedErr)
	assert.False(t, got.locked, "the lock was still held when echo's error handler ran")
}

func TestTheHandlerRunsWithTheHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	const key = "http:GET /held"

	t.Run("c.Request holds the lock and is put back afterwards", func(t *testing.T) {
		restored := make(chan bool, 1)
		e := newEcho()
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c *echo.Context) error {
				before := c.Request()
				err := next(c)
				restored <- c.Request() == before
				return err
			}
		})
		e.Use(echo5mw.New(locks, httpmw.WithWait(0)))
		e.GET("/held", func(c *echo.Context) error {
			// The hold context carries the holder: HoldCount is 0 with any
			// other context.
			n, err := locks.Mutex(key).HoldCount(c.Request().Context())
			if err != nil || n != 1 {
				return c.String(http.StatusInternalServerError, "hold count "+strconv.Itoa(n))
			}
			if c.Request().Pattern != "GET /held" {
				return c.String(http.StatusInternalServerError, "pattern "+c.Request().Pattern)
			}
			return c.NoContent(http.StatusOK)
		})
		s := routertest.Serve(t, e)
		r := routertest.Send(t.Context(), s, "GET", "/held")
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
		assert.True(t, testsupport.Recv(t, restored, routertest.Patience, "outer middleware"), "the original request was not put back")
	})

	t.Run("a lost lock cancels c.Request's context", func(t *testing.T) {
		causes := make(chan error, 1)
		entered := make(chan struct{})
		e := newEcho()
		e.Use(echo5mw.New(locks, httpmw.WithWait(0)))
		e.GET("/held", func(c *echo.Context) error {
			close(entered)
			ctx := c.Request().Context()
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
			case <-time.After(routertest.Patience):
				causes <- errors.New("c.Request().Context() not cancelled")
			}
			return nil
		})
		s := routertest.Serve(t, e)
		got := routertest.SendAsync(t.Context(), s, "GET", "/held")
		testsupport.Recv(t, entered, routertest.Patience, "handler entering")
		_, err := locks.Mutex(key).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.ErrorIs(t, testsupport.Recv(t, causes, routertest.Patience, "cause"), lockmw.ErrLockLost)
		testsupport.Recv(t, got, routertest.Patience, "reply")
	})
}

func TestConfigurationPanics(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	assert.PanicsWithValue(t, "httpmw: New(nil): a lockmw.Client is required", func() { echo5mw.New(nil) })
	assert.PanicsWithValue(t, "httpmw: New: nil Option", func() { echo5mw.New(locks, nil) })
	assert.PanicsWithValue(t, "httpmw: WithWait(-1s): must not be negative", func() { echo5mw.New(locks, httpmw.WithWait(-time.Second)) })
	assert.NotPanics(t, func() { echo5mw.New(locks, httpmw.WithPathValues("id"), httpmw.WithPermits(2)) })
}
