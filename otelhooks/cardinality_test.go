package otelhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// entities is how many distinct per-resource lock names each adapter makes.
const entities = 10_000

// concurrently runs f(0) to f(n-1) on 16 goroutines.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// The adapters' per-entity lock names are counted under their group (the
// route, the task type): 10,000 resources make a handful of series, while
// spans keep the full name.
//
// It runs alone (not parallel): 20,000 holds are the heaviest work of the
// package, and the other tests wait for renewals and hand-overs. Holder
// links, which play no part in the metrics, are off: one script less per
// hold.
func TestAdaptersMetricsStayBoundedPerEntity(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(tel.hooks(otelhooks.WithHolderLinks(false))))
	ctx := t.Context()

	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", httpmw.New(c, httpmw.WithPathValues("id")).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	var httpFailed, asynqFailed sync.Map
	concurrently(entities, func(i int) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("/orders/%d", i), nil))
		if w.Code != http.StatusOK {
			httpFailed.Store(i, w.Code)
		}
	})
	task := asynqmw.New(c)(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))
	concurrently(entities, func(i int) {
		if err := task.ProcessTask(ctx, asynq.NewTask("email:send", fmt.Appendf(nil, `{"to":"user%d@example.com"}`, i))); err != nil {
			asynqFailed.Store(i, err)
		}
	})
	httpFailed.Range(func(k, v any) bool { t.Errorf("request %v: status %v", k, v); return false })
	asynqFailed.Range(func(k, v any) bool { t.Errorf("task %v: %v", k, v); return false })

	route, taskType := "http:POST /orders/{id}", "asynq:lock:email:send"
	for _, metric := range []string{otelhooks.WaitDurationMetric, otelhooks.HoldDurationMetric} {
		t.Run(metric+" has one series per route and task type", func(t *testing.T) {
			sets := tel.attrSets(t, metric)
			require.LessOrEqual(t, len(sets), 4, "series (attribute sets) of %s", metric)
			names := map[string]bool{}
			for _, set := range sets {
				v, ok := set.Value(otelhooks.LockNameKey)
				require.True(t, ok, "a data point without lock.name: %v", set)
				names[v.AsString()] = true
			}
			assert.Equal(t, map[string]bool{route: true, taskType: true}, names)
			assert.EqualValues(t, entities, tel.histCount(t, metric, otelhooks.LockNameKey.String(route)))
			assert.EqualValues(t, entities, tel.histCount(t, metric, otelhooks.LockNameKey.String(taskType)))
		})
	}
	t.Run("spans keep the full name and carry the group", func(t *testing.T) {
		want := map[string]string{
			"http:POST /orders/{id}#id=42": route,
			"asynq:lock:" + asynqmw.DefaultKey(ctx, asynq.NewTask("email:send", []byte(`{"to":"user42@example.com"}`))): taskType,
		}
		for _, name := range []string{otelhooks.WaitSpanName, otelhooks.HoldSpanName} {
			found := 0
			for _, s := range tel.ended(name) {
				if group, ok := want[attr(t, s, otelhooks.LockNameKey).AsString()]; ok {
					assert.Equal(t, group, attr(t, s, otelhooks.LockGroupKey).AsString())
					found++
				}
			}
			assert.Equal(t, 2, found, name)
		}
	})
}

// A name a program chose keeps today's labels: the name itself, no group.
func TestLocksWithoutAGroupAreCountedByName(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := tel.client(t, srv.NewClient())
	ctx := t.Context()
	for _, l := range []lockmw.Locker{c.Mutex("nightly-report"), c.Mutex("orders:1", lockmw.WithGroup("orders")), c.Semaphore("exports", 2)} {
		require.NoError(t, lockmw.WithLock(ctx, l, func(context.Context) error { return nil }))
	}
	for _, metric := range []string{otelhooks.WaitDurationMetric, otelhooks.HoldDurationMetric} {
		for _, name := range []string{"nightly-report", "orders", "exports"} {
			assert.EqualValues(t, 1, tel.histCount(t, metric, otelhooks.LockNameKey.String(name)), "%s of %s", metric, name)
		}
		assert.Zero(t, tel.histCount(t, metric, otelhooks.LockNameKey.String("orders:1")), metric)
	}
	hold := tel.waitEnded(t, otelhooks.HoldSpanName, func(s sdktrace.ReadOnlySpan) bool {
		return attr(t, s, otelhooks.LockNameKey).AsString() == "nightly-report"
	})
	assert.False(t, hasAttr(hold, otelhooks.LockGroupKey), "no group, no lock.group")
}

// WithLockNameFunc maps the group when there is one, else the name.
func TestTheLockNameFuncIsGivenTheGroup(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(tel.hooks(otelhooks.WithLockNameFunc(strings.ToUpper))))
	ctx := t.Context()
	for _, m := range []*lockmw.Mutex{c.Mutex("orders:1", lockmw.WithGroup("orders")), c.Mutex("nightly")} {
		require.NoError(t, lockmw.WithLock(ctx, m, func(context.Context) error { return nil }))
	}
	for _, name := range []string{"ORDERS", "NIGHTLY"} {
		assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric, otelhooks.LockNameKey.String(name)), name)
	}
}
