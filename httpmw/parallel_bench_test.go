package httpmw_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/benchmeter"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// benchParallelism is b.SetParallelism's factor: 32 goroutines per P, 64
// on 2 cores, as examples/bench's parallel scenario.
const benchParallelism = 32

// BenchmarkPerResourceRequests is what the lock costs a handler: requests
// per second, and their latency, of POST /orders/{id} with a new id each
// request, from 64 goroutines (32 per P), without the middleware and with
// httpmw.WithPathValues("id") wrapping the route (a lock per order, none of
// them contended). The handler does what a handler that updates an order
// does: one Redis round trip (INCR) on the service's go-redis client, which
// the lockmw.Client shares; the client has go-redis' default options, as a
// service builds it.
//
// Sub-benchmarks: the ground (loopback; through a faultproxy, 500 µs each
// way, for the lock and the handler's Redis alike), how the request is
// served (serve=direct: mux.ServeHTTP with a recorder, no transport, the
// lock's cost alone; serve=tcp: an httptest.Server and a keep-alive client,
// what a user's client feels) and lock=none or lock=per-resource. Metrics
// beside ns/op: see package benchmeter. Run with
//
//	go test -run '^$' -bench PerResourceRequests -count 3 ./httpmw
func BenchmarkPerResourceRequests(b *testing.B) {
	srv := redistest.Start(b)
	for _, g := range benchmeter.Grounds {
		b.Run("ground="+g.Name, func(b *testing.B) {
			addr := g.Addr(b, srv)
			rdb := srv.NewClient(func(o *redis.Options) { o.Addr, o.ContextTimeoutEnabled = addr, false })
			b.Cleanup(func() { _ = rdb.Close() })
			locks := locktest.New(b, rdb)
			locktest.Warm(b, locks)
			for _, serve := range []string{"direct", "tcp"} {
				for _, lock := range []string{"none", "per-resource"} {
					b.Run("serve="+serve+"/lock="+lock, func(b *testing.B) {
						benchRequests(b, srv, orderMux(rdb, locks, lock == "per-resource"), serve == "tcp")
					})
				}
			}
		})
	}
}

// orderMux serves POST /orders/{id} with a handler that increments the
// order's counter, wrapped with a per-order lock when locked.
func orderMux(rdb *redis.Client, locks *lockmw.Client, locked bool) *http.ServeMux {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Incr(r.Context(), "order:"+r.PathValue("id")).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	if locked {
		h = httpmw.New(locks, httpmw.WithPathValues("id")).Wrap(h)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", h)
	return mux
}

// orderIDs numbers the requests of every benchmark: each one a new order.
var orderIDs atomic.Int64

// benchRequests sends b.N requests to mux from benchParallelism goroutines
// per P, directly or over TCP, after one untimed request per goroutine (the
// connections dialled, the lock's scripts loaded).
func benchRequests(b *testing.B, srv *redistest.Server, mux *http.ServeMux, overTCP bool) {
	send := func(path string) (int, error) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, nil))
		return w.Code, nil
	}
	if overTCP {
		ts := httptest.NewUnstartedServer(mux)
		ts.Config.ErrorLog = log.New(io.Discard, "", 0)
		ts.Start()
		defer ts.Close()
		client := ts.Client()
		client.Transport.(*http.Transport).MaxIdleConnsPerHost = benchParallelism * 8
		send = func(path string) (int, error) { return post(client, ts.URL+path) }
	}
	b.SetParallelism(benchParallelism)
	warm(b, send)
	m := benchmeter.New(srv)
	m.Start(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			start := time.Now()
			code, err := send("/orders/" + strconv.FormatInt(orderIDs.Add(1), 10))
			lat = append(lat, time.Since(start))
			if err != nil || code != http.StatusOK {
				b.Errorf("POST /orders/{id}: %d %v", code, err)
				return
			}
		}
		m.Record(lat)
	})
	b.StopTimer()
	m.Report(b, "req")
}

// warm sends as many requests at once as the benchmark runs goroutines.
func warm(b *testing.B, send func(path string) (int, error)) {
	b.Helper()
	var wg sync.WaitGroup
	for range benchParallelism * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			if code, err := send("/orders/" + strconv.FormatInt(orderIDs.Add(1), 10)); err != nil || code != http.StatusOK {
				b.Errorf("warm-up POST /orders/{id}: %d %v", code, err)
			}
		})
	}
	wg.Wait()
}

// post sends an empty POST to url and reads the whole answer.
func post(client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
