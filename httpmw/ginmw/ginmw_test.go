package ginmw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/httpmw/ginmw"
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
	work := func(c *gin.Context) {
		g.Work()
	}
	// Two instances: each its own lockmw Client, engine and server. The
	// short watchdog timeout makes waiters also retry every 300ms, as in
	// httpmw's test of the same name.
	var servers []*httptest.Server
	for range 2 {
		r := newEngine()
		r.Use(ginmw.New(locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(900*time.Millisecond))))
		r.POST("/orders/:id", work)
		servers = append(servers, routertest.Serve(t, r))
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

func TestPerResource(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)

	t.Run("different resources run in parallel", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks, httpmw.WithPathValues("id")))
		r.POST("/orders/:id", barrier(2))
		s := routertest.Serve(t, r)
		r1, r2 := routertest.SendAsync(t.Context(), s, "POST", "/orders/1"), routertest.SendAsync(t.Context(), s, "POST", "/orders/2")
		routertest.AllOK(t, r1, r2)
	})

	t.Run("the key is the method, gin's template and the parameters", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks, httpmw.WithPathValues("id"), httpmw.WithWait(0)))
		r.POST("/orders/:id", func(c *gin.Context) {})
		files := r.Group("/files", ginmw.New(locks, httpmw.WithPathValues("path"), httpmw.WithWait(0)))
		files.GET("/*path", func(c *gin.Context) {})
		s := routertest.Serve(t, r)

		release := locktest.Hold(t, locktest.NewOn(t, srv), "http:POST /orders/:id#id=7", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "POST", "/orders/7").Status)
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/8").Status, "another order is free")
		release()
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/7").Status)

		locktest.Hold(t, locktest.NewOn(t, srv), "http:GET /files/*path#path=%2Fa%2Fb", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "GET", "/files/a/b").Status, "a catch-all's value")
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/files/a/c").Status)
	})

	t.Run("a key function sees the pattern and the path values", func(t *testing.T) {
		seen := make(chan string, 1)
		r := newEngine()
		r.Use(ginmw.New(locks, httpmw.WithKey(func(r *http.Request) string {
			seen <- r.Pattern + " id=" + r.PathValue("id")
			return "tenant:" + r.PathValue("id")
		}), httpmw.WithWait(0)))
		var outer string
		r.PUT("/tenants/:id/plan", func(c *gin.Context) {
			outer = c.Param("id")
		})
		s := routertest.Serve(t, r)
		locktest.Hold(t, locktest.NewOn(t, srv), "tenant:acme", 0)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "PUT", "/tenants/acme/plan").Status)
		assert.Equal(t, "PUT /tenants/:id/plan id=acme", testsupport.Recv(t, seen, routertest.Patience, "key"))
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "PUT", "/tenants/other/plan").Status)
		assert.Equal(t, "PUT /tenants/:id/plan id=other", testsupport.Recv(t, seen, routertest.Patience, "key"))
		assert.Equal(t, "other", outer)
	})
}

func TestUnmatchedRequestsPassThroughUnlocked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var acquisitions atomic.Int64
	locks := locktest.NewOn(t, srv, countAcquisitions(&acquisitions))
	r := newEngine()
	r.HandleMethodNotAllowed = true // gin answers 405 only when asked to
	r.Use(ginmw.New(locks))
	r.POST("/orders/:id", func(c *gin.Context) {})
	r.GET("/dir/", func(c *gin.Context) {})
	s := routertest.Serve(t, r)
	noRedirects := *s.Client()
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/nowhere", http.StatusNotFound},
		{"POST", "/orders", http.StatusNotFound},
		{"DELETE", "/orders/7", http.StatusMethodNotAllowed},
		{"GET", "/dir", http.StatusMovedPermanently},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, s.URL+tc.path, nil)
		require.NoError(t, err)
		resp, err := noRedirects.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, "%s %s", tc.method, tc.path)
	}
	assert.Zero(t, acquisitions.Load(), "a request without a route took a lock")
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/7").Status)
	assert.EqualValues(t, 1, acquisitions.Load(), "a matched route took no lock")

	t.Run("a NoRoute handler runs unlocked too", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks))
		r.NoRoute(func(c *gin.Context) { c.String(http.StatusTeapot, "custom") })
		s := routertest.Serve(t, r)
		before := acquisitions.Load()
		got := routertest.Send(t.Context(), s, "GET", "/nowhere")
		assert.Equal(t, http.StatusTeapot, got.Status)
		assert.Equal(t, "custom", got.Body)
		assert.Equal(t, before, acquisitions.Load())
	})
}

// chainRecorder records what the handlers around the middleware saw.
type chainRecorder struct {
	mu            sync.Mutex
	outerAborted  bool
	outerStatus   int
	innerRan      bool
	handlerRanFor []string
}

func TestBusyAnswerEndsTheChain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	tests := []struct {
		name       string
		opts       []httpmw.Option
		wantStatus int
		wantRetry  string
	}{
		{"WithWait(0) rejects at once with the defaults", []httpmw.Option{httpmw.WithWait(0)}, http.StatusConflict, "1"},
		{"the status and the hint are httpmw's options", []httpmw.Option{httpmw.WithWait(0), httpmw.WithBusyStatus(http.StatusTooManyRequests), httpmw.WithRetryAfter(2500 * time.Millisecond)}, http.StatusTooManyRequests, "3"},
		{"a short wait ends busy", []httpmw.Option{httpmw.WithWait(100 * time.Millisecond)}, http.StatusConflict, "1"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := "/r" + strconv.Itoa(i)
			var rec chainRecorder
			r := newEngine()
			r.Use(func(c *gin.Context) { // before the middleware
				c.Next()
				rec.mu.Lock()
				defer rec.mu.Unlock()
				rec.outerAborted, rec.outerStatus = c.IsAborted(), c.Writer.Status()
			})
			r.Use(ginmw.New(locks, tt.opts...))
			r.Use(func(c *gin.Context) { // after it
				rec.mu.Lock()
				rec.innerRan = true
				rec.mu.Unlock()
			})
			r.GET(route, func(c *gin.Context) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				rec.handlerRanFor = append(rec.handlerRanFor, c.Request.URL.RawQuery)
			})
			s := routertest.Serve(t, r)
			release := locktest.Hold(t, locktest.NewOn(t, srv), "http:GET "+route, 0)

			got := routertest.Send(t.Context(), s, "GET", route+"?busy")
			require.NoError(t, got.Err)
			assert.Equal(t, tt.wantStatus, got.Status)
			assert.Equal(t, tt.wantRetry, got.Header.Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", got.Header.Get("Content-Type"))
			assert.Contains(t, got.Body, "busy")
			rec.mu.Lock()
			assert.False(t, rec.innerRan, "a handler after the middleware ran")
			assert.Empty(t, rec.handlerRanFor, "the route's handler ran without the lock")
			assert.True(t, rec.outerAborted, "the chain was not aborted")
			assert.Equal(t, tt.wantStatus, rec.outerStatus)
			rec.mu.Unlock()

			release()
			got = routertest.Send(t.Context(), s, "GET", route+"?free")
			assert.Equal(t, http.StatusOK, got.Status, "after release: %s", got.Body)
			rec.mu.Lock()
			assert.Equal(t, []string{"free"}, rec.handlerRanFor)
			assert.False(t, rec.outerAborted)
			rec.mu.Unlock()
		})
	}
}

func TestAPanicReleasesTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	for _, tc := range []struct {
		name  string
		chain func(mw gin.HandlerFunc) []gin.HandlerFunc
	}{
		{"with gin.Recovery before the middleware", func(mw gin.HandlerFunc) []gin.HandlerFunc {
			return []gin.HandlerFunc{gin.RecoveryWithWriter(io.Discard), mw}
		}},
		{"with gin.Recovery after the middleware", func(mw gin.HandlerFunc) []gin.HandlerFunc {
			return []gin.HandlerFunc{mw, gin.RecoveryWithWriter(io.Discard)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gin.New()
			// WithWait(0): a lock left behind by the panic would refuse the
			// next request at once.
			r.Use(tc.chain(ginmw.New(locks, httpmw.WithWait(0)))...)
			r.POST("/orders/:id", func(c *gin.Context) {
				if _, ok := c.GetQuery("panic"); ok {
					panic("handler failed")
				}
			})
			s := routertest.Serve(t, r)

			got := routertest.Send(t.Context(), s, "POST", "/orders/1?panic")
			require.NoError(t, got.Err)
			assert.Equal(t, http.StatusInternalServerError, got.Status, "gin.Recovery answers the panic")
			locked, err := locks.Mutex("http:POST /orders/:id").IsLocked(t.Context())
			require.NoError(t, err)
			assert.False(t, locked, "the lock outlived the panic")
			assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/orders/1").Status, "the next request got the lock")
		})
	}
}

func TestTheChainRunsWithTheHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
	const key = "http:POST /held"

	t.Run("c.Request carries the hold and httpmw's body, and is put back after", func(t *testing.T) {
		r := newEngine()
		var orig, inner *http.Request
		r.Use(func(c *gin.Context) {
			orig = c.Request
			c.Next()
			assert.Same(t, orig, c.Request, "the original request was not put back")
			assert.Empty(t, c.Request.PathValue("id"), "path values leaked into the original request")
			assert.NoError(t, c.Request.Context().Err())
			assert.Error(t, inner.Context().Err(), "the hold context outlived the hold")
		})
		r.Use(ginmw.New(locks, httpmw.WithWait(0), httpmw.WithPathValues("id")))
		const key = "http:POST /items/:id#id=7"
		r.POST("/items/:id", func(c *gin.Context) {
			inner = c.Request
			assert.Equal(t, "7", c.Request.PathValue("id"))
			held, err := locks.Mutex(key).IsHeld(c.Request.Context())
			assert.NoError(t, err)
			assert.True(t, held, "c.Request.Context() is not the hold context")
			// A nested lock with the hold context re-enters.
			err = lockmw.WithLock(c.Request.Context(), locks.Mutex(key), func(ctx context.Context) error {
				n, err := locks.Mutex(key).HoldCount(ctx)
				assert.Equal(t, 2, n)
				return err
			}, lockmw.WithWait(0))
			assert.NoError(t, err)
			b, err := io.ReadAll(c.Request.Body)
			assert.NoError(t, err)
			c.String(http.StatusOK, "%s", b)
		})
		s := routertest.Serve(t, r)
		got := routertest.SendBody(t.Context(), s, "POST", "/items/7", strings.NewReader(`{"qty":1}`))
		assert.Equal(t, http.StatusOK, got.Status, got.Body)
		assert.Equal(t, `{"qty":1}`, got.Body)
	})

	t.Run("a lost lock cancels c.Request.Context", func(t *testing.T) {
		r := newEngine()
		r.Use(ginmw.New(locks))
		entered, causes := make(chan struct{}), make(chan error, 1)
		r.POST("/held", func(c *gin.Context) {
			close(entered)
			select {
			case <-c.Request.Context().Done():
				causes <- context.Cause(c.Request.Context())
			case <-time.After(routertest.Patience):
				causes <- errors.New("c.Request.Context() not cancelled")
			}
		})
		s := routertest.Serve(t, r)
		got := routertest.SendAsync(t.Context(), s, "POST", "/held")
		testsupport.Recv(t, entered, routertest.Patience, "handler entering")
		_, err := locks.Mutex(key).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.ErrorIs(t, testsupport.Recv(t, causes, routertest.Patience, "cause"), lockmw.ErrLockLost)
		testsupport.Recv(t, got, routertest.Patience, "reply")
	})

	// gin.Context's Done and Value reach c.Request.Context() only with the
	// engine's ContextWithFallback (gin's context.go, hasRequestContext).
	for _, fallback := range []bool{false, true} {
		t.Run("c as a context carries the hold only with ContextWithFallback="+strconv.FormatBool(fallback), func(t *testing.T) {
			r := newEngine()
			r.ContextWithFallback = fallback
			r.Use(ginmw.New(locks))
			r.POST("/held", func(c *gin.Context) {
				held, err := locks.Mutex(key).IsHeld(c)
				assert.NoError(t, err)
				assert.Equal(t, fallback, held)
				assert.Equal(t, fallback, c.Done() != nil)
				// A nested lock taken with c re-enters only when c carries the
				// hold; otherwise c is another owner, and finds the lock busy.
				err = lockmw.WithLock(c, locks.Mutex(key), func(context.Context) error { return nil }, lockmw.WithWait(0))
				if fallback {
					assert.NoError(t, err)
				} else {
					_, busy := errors.AsType[*lockmw.BusyError](err)
					assert.True(t, busy, "%v", err)
				}
				if fallback {
					assert.Equal(t, c.Request.Context().Done(), c.Done())
				}
			})
			s := routertest.Serve(t, r)
			assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/held").Status)
		})
	}
}

func TestRegistration(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	mw := ginmw.New(locks, httpmw.WithWait(0))
	ok := func(c *gin.Context) {}
	for _, name := range []string{"http:GET /early", "http:GET /late", "http:POST /route", "http:PUT /orders/:id", "http:GET /group/used"} {
		locktest.Hold(t, locktest.NewOn(t, srv), name, 0)
	}
	r := newEngine()
	r.GET("/early", ok) // registered before Use: gin copied its chain already
	r.Use(mw)
	r.GET("/late", ok)
	r.POST("/route", mw, ok)
	orders := r.Group("/orders", mw)
	orders.PUT("/:id", ok)
	g := r.Group("/group")
	g.Use(mw)
	g.GET("/used", ok)
	s := routertest.Serve(t, r)

	for _, tc := range []struct {
		name, method, path string
		status             int
	}{
		{"a route registered before Use is not locked", "GET", "/early", http.StatusOK},
		{"Use locks the routes registered after it", "GET", "/late", http.StatusConflict},
		{"a route's own middleware locks it", "POST", "/route", http.StatusConflict},
		{"a group's middleware locks its routes", "PUT", "/orders/7", http.StatusConflict},
		{"a group's Use locks its routes", "GET", "/group/used", http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.status, routertest.Send(t.Context(), s, tc.method, tc.path).Status)
		})
	}

	t.Run("per route only the route is locked", func(t *testing.T) {
		r := newEngine()
		r.POST("/route", mw, ok)
		r.GET("/late", ok)
		s := routertest.Serve(t, r)
		assert.Equal(t, http.StatusConflict, routertest.Send(t.Context(), s, "POST", "/route").Status)
		assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "GET", "/late").Status)
	})
}

func TestNewPanicsOnBadConfiguration(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{"httpmw: New(nil): a lockmw.Client is required", func() { ginmw.New(nil) }},
		{"httpmw: New: nil Option", func() { ginmw.New(locks, nil) }},
		{"httpmw: WithWait(-1s): must not be negative", func() { ginmw.New(locks, httpmw.WithWait(-time.Second)) }},
	} {
		assert.PanicsWithValue(t, tc.want, tc.f)
	}
}

// The middleware hands httpmw a copy of c.Request: the request gin's caller
// passed in keeps its own path values, even when gin is served under a
// ServeMux whose wildcard has the name of a gin parameter.
func TestTheCallersRequestIsUntouched(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newEngine()
	r.Use(ginmw.New(locktest.NewOn(t, srv), httpmw.WithPathValues("id")))
	r.POST("/t/:tenant/orders/:id", func(c *gin.Context) {
		assert.Equal(t, "7", c.Request.PathValue("id"), "gin's parameter")
		assert.Equal(t, "acme", c.Request.PathValue("tenant"))
	})
	after := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/t/{id}/", func(w http.ResponseWriter, req *http.Request) {
		r.ServeHTTP(w, req)
		after <- req.PathValue("id") + " " + req.PathValue("tenant")
	})
	s := routertest.Serve(t, mux)
	assert.Equal(t, http.StatusOK, routertest.Send(t.Context(), s, "POST", "/t/acme/orders/7").Status)
	assert.Equal(t, "acme ", testsupport.Recv(t, after, routertest.Patience, "the ServeMux's values"))
}
