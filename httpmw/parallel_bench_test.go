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

// benchVariants are the routes of BenchmarkPerResourceRequests' turns:
// the handler alone, and the handler under a per-order lock.
var benchVariants = [2]string{"/plain", "/locked"}

// BenchmarkPerResourceRequests is what the lock costs a handler: requests
// per second, and their latency, of POST /orders/{id} with a new id each
// request, from 64 goroutines (32 per P), without the middleware ("none")
// and with httpmw.WithPathValues("id") wrapping the route ("lock": a lock
// per order, none of them contended). The two take turns on one mux (the
// routes /plain/orders/{id} and /locked/orders/{id}), every 2 s with
// -benchtime 30s (benchmeter.TurnLength), so that both see the same
// machine; a turn ends when its requests have (see benchmeter.Turns, also
// for the metrics; ns/op is both together). The handler does what a
// handler that updates an order does: one Redis round trip (INCR) on the
// service's go-redis client, which the lockmw.Client shares; the client
// has go-redis' default options, as a service builds it.
//
// Sub-benchmarks: the ground (loopback; through a faultproxy, 500 µs each
// way, for the lock and the handler's Redis alike) and how a request is
// served (serve=direct: mux.ServeHTTP with a recorder, no transport, the
// lock's cost alone; serve=tcp: an httptest.Server and a keep-alive client,
// what a user's client feels). Run with
//
//	go test -run '^$' -bench PerResourceRequests -benchtime 30s ./httpmw
func BenchmarkPerResourceRequests(b *testing.B) {
	srv := redistest.Start(b)
	for _, g := range benchmeter.Grounds {
		b.Run("ground="+g.Name, func(b *testing.B) {
			addr := g.Addr(b, srv)
			rdb := srv.NewClient(func(o *redis.Options) { o.Addr, o.ContextTimeoutEnabled = addr, false })
			b.Cleanup(func() { _ = rdb.Close() })
			locks := locktest.New(b, rdb)
			mux := orderMux(rdb, locks)
			for _, serve := range []string{"direct", "tcp"} {
				b.Run("serve="+serve, func(b *testing.B) { benchRequests(b, srv, mux, serve == "tcp") })
			}
		})
	}
}

// orderMux serves POST /plain/orders/{id} with a handler that increments
// the order's counter, and POST /locked/orders/{id} with the same handler
// under a per-order lock.
func orderMux(rdb *redis.Client, locks *lockmw.Client) *http.ServeMux {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Incr(r.Context(), "order:"+r.PathValue("id")).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux := http.NewServeMux()
	mux.Handle("POST "+benchVariants[0]+"/orders/{id}", h)
	mux.Handle("POST "+benchVariants[1]+"/orders/{id}", httpmw.New(locks, httpmw.WithPathValues("id")).Wrap(h))
	return mux
}

// orderIDs numbers the requests of every benchmark: each one a new order.
var orderIDs atomic.Int64

// orderPath is the path of a new order's request to variant v.
func orderPath(v int) string {
	return benchVariants[v] + "/orders/" + strconv.FormatInt(orderIDs.Add(1), 10)
}

// benchRequests sends b.N requests to mux from benchParallelism goroutines
// per P, directly or over TCP, the variants taking turns, after a few
// untimed requests of each (the connections dialled).
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
		client.Transport.(*http.Transport).MaxIdleConnsPerHost = benchParallelism * runtime.GOMAXPROCS(0)
		send = func(path string) (int, error) { return post(client, ts.URL+path) }
	}
	b.SetParallelism(benchParallelism)
	warm(b, send)
	turns := benchmeter.NewTurns(srv, "none", "lock")
	turns.Start(b)
	stop := turns.PassEvery(b, benchmeter.TurnLength())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v := turns.Begin()
			start := time.Now()
			code, err := send(orderPath(v))
			turns.End(v, time.Since(start))
			if err != nil || code != http.StatusOK {
				b.Errorf("POST %s/orders/{id}: %d %v", benchVariants[v], code, err)
				return
			}
		}
	})
	b.StopTimer()
	stop()
	turns.Report(b, "req")
}

// warm sends, to each variant, as many requests at once as the benchmark
// runs goroutines.
func warm(b *testing.B, send func(path string) (int, error)) {
	b.Helper()
	var wg sync.WaitGroup
	for i := range 2 * benchParallelism * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			if code, err := send(orderPath(i % 2)); err != nil || code != http.StatusOK {
				b.Errorf("warm-up POST %s/orders/{id}: %d %v", benchVariants[i%2], code, err)
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
