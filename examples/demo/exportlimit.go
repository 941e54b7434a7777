package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/examples/internal/timeline"
	"github.com/go-rlock/rlock/httpmw"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

const (
	exportKey      = "exports:tenant-7"   // httpmw.WithKey's name for the route
	exportLock     = "limit:" + exportKey // the semaphore httpmw.WithPermits takes for it
	exportLimit    = 2
	exportRequests = 5
	exportWork     = 150 * time.Millisecond // an export's work under its permit
	exportWorkSpan = "build export"
	exportRoot     = "request-" // the handler's span for request n is "request-<n>"
)

// exportJournal tracks the exports running on all instances.
type exportJournal struct {
	mu      sync.Mutex
	running int
	maxRun  int
}

// exportInstance is what one instance of the export service reports to and
// traces with.
type exportInstance struct {
	name   string
	tracer trace.Tracer
	j      *exportJournal
	p      *printer
}

// exportSection starts two instances of a service whose export route is
// limited to two at once across both (a Semaphore of 2 permits), sends five
// concurrent requests and draws the timeline from the spans otelhooks
// records. It fails unless every request is served and the exports, as the
// spans show them, never run more than two at once.
func exportSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.Empty()),
		sdktrace.WithSyncer(mem),
	)
	defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
	hooks := otelhooks.New(otelhooks.WithTracerProvider(tp))
	j := &exportJournal{}
	var services []*httpService
	defer func() {
		for _, s := range services {
			s.srv.Close()
			_ = s.locks.Close()
		}
	}()
	for _, name := range []string{"instance-A", "instance-B"} {
		e := &exportInstance{name: name, tracer: tp.Tracer("examples/demo"), j: j, p: p}
		services = append(services, newExportService(rdb, hooks, e))
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	p.note("instance-A and instance-B serve POST /exports through httpmw.New(c, WithPermits(%d), WithKey(%q)), a semaphore %q:", exportLimit, exportKey, exportLock)
	p.note("at most %d exports at once across both, each working %v; their Clients have otelhooks", exportLimit, exportWork)

	if err := sendExports(ctx, client, services, p); err != nil {
		return err
	}
	j.mu.Lock()
	maxRun := j.maxRun
	j.mu.Unlock()
	if maxRun > exportLimit {
		return fmt.Errorf("%d exports ran at once, want at most %d", maxRun, exportLimit)
	}

	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	spans := mem.GetSpans()
	rows, err := exportRows(spans)
	if err != nil {
		return err
	}
	if len(rows) != exportRequests {
		return fmt.Errorf("spans of %d requests, want %d", len(rows), exportRequests)
	}
	if err := checkSemaphoreSpans(rows); err != nil {
		return err
	}
	busiest, err := busiestExports(spans)
	if err != nil {
		return err
	}
	p.note("every lock.wait and lock.hold span has lock.kind=semaphore, lock.permits=%d (a permit's wait links to", exportLimit)
	p.note("no holder: a semaphore keeps no metadata)")
	var b strings.Builder
	if err := timeline.Draw(&b, rows, fmt.Sprintf("  timeline of %q (%d permits)", exportLock, exportLimit), timeline.Format{
		Columns: timelineColumns, Indent: "  ", NameWidth: 9,
	}); err != nil {
		return err
	}
	p.blank()
	p.printf("%s", b.String())
	p.summary("%d requests, all 200 OK; the %q spans show at most %d exports at once (%d at the busiest)",
		exportRequests, exportWorkSpan, exportLimit, busiest)
	return nil
}

// sendExports sends the export requests to the services in turn, 10ms
// apart, and checks that each is answered 200 OK.
func sendExports(ctx context.Context, client *http.Client, services []*httpService, p *printer) error {
	statuses := make([]string, exportRequests)
	errs := make([]error, exportRequests)
	var wg sync.WaitGroup
	for i := range exportRequests {
		s := services[i%len(services)]
		n := i + 1
		p.event("request %d sent to %s", n, s.name)
		wg.Go(func() {
			start := time.Now()
			resp, err := post(ctx, client, fmt.Sprintf("%s/exports?n=%d", s.srv.URL, n))
			if err != nil {
				errs[i] = fmt.Errorf("request %d: %w", n, err)
				return
			}
			statuses[i] = resp.Status
			p.event("request %d answered %s after %v", n, resp.Status, time.Since(start).Round(time.Millisecond))
		})
		// A little apart, so that the requests queue up in a known order.
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range statuses {
		if s != "200 OK" {
			return fmt.Errorf("request %d: %s, want 200 OK", i+1, s)
		}
	}
	return nil
}

// newExportService starts the instance e of the service, its Client
// instrumented with hooks.
func newExportService(rdb redis.UniversalClient, hooks lockmw.Hooks, e *exportInstance) *httpService {
	locks := lockmw.New(rdb, lockmw.WithHooks(hooks), withName(e.name))
	// The route's limit: at most exportLimit requests of the key at once,
	// across both instances (a lockmw.Semaphore named exportLock).
	limited := httpmw.New(locks, httpmw.WithPermits(exportLimit),
		httpmw.WithKey(func(*http.Request) string { return exportKey }))
	export := limited.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// r.Context() is the hold context of the permit, whose span is the permit's lock.hold.
		fmt.Fprint(w, e.export(r.Context(), r.URL.Query().Get("n")))
	}))

	mux := http.NewServeMux()
	mux.HandleFunc("POST /exports", func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		// The request's span, as otelhttp would start it; a root here, for the
		// demo's client sends no traceparent.
		ctx, span := e.tracer.Start(r.Context(), exportRoot+n, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		export.ServeHTTP(w, r.WithContext(ctx))
	})
	return &httpService{name: e.name, locks: locks, srv: httptest.NewServer(mux)}
}

// export is request n's export, run with a permit: pctx is the permit
// context, whose span is the permit's lock.hold.
func (e *exportInstance) export(pctx context.Context, n string) string {
	j := e.j
	j.mu.Lock()
	j.running++
	j.maxRun = max(j.maxRun, j.running)
	running := j.running
	j.mu.Unlock()
	e.p.event("request %s exports on %s (%d running)", n, e.name, running)
	_, work := e.tracer.Start(pctx, exportWorkSpan) // a child of lock.hold
	select {
	case <-time.After(exportWork):
	case <-pctx.Done():
	}
	work.End()
	j.mu.Lock()
	j.running--
	j.mu.Unlock()
	return fmt.Sprintf("export %s built by %s\n", n, e.name)
}

// exportRows finds each request's lock.wait and lock.hold spans: those in
// the trace of a root span named "request-<n>". The rows are sorted by
// request.
func exportRows(spans tracetest.SpanStubs) ([]*timeline.Row, error) {
	byTrace := map[trace.TraceID]*timeline.Row{}
	for _, s := range spans {
		if !s.Parent.IsValid() && strings.HasPrefix(s.Name, exportRoot) {
			byTrace[s.SpanContext.TraceID()] = &timeline.Row{Worker: s.Name}
		}
	}
	rows := make([]*timeline.Row, 0, len(byTrace))
	for _, s := range spans {
		r := byTrace[s.SpanContext.TraceID()]
		switch {
		case r == nil:
		case s.Name == otelhooks.WaitSpanName:
			r.Wait = s
		case s.Name == otelhooks.HoldSpanName:
			r.Hold = s
		}
	}
	for _, r := range byTrace {
		if r.Wait.Name == "" || r.Hold.Name == "" {
			return nil, fmt.Errorf("%s: its %s or %s span is missing", r.Worker, otelhooks.WaitSpanName, otelhooks.HoldSpanName)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *timeline.Row) int { return strings.Compare(a.Worker, b.Worker) })
	return rows, nil
}

// checkSemaphoreSpans checks that every lock.wait and lock.hold span says it
// is a permit of a semaphore of exportLimit permits.
func checkSemaphoreSpans(rows []*timeline.Row) error {
	for _, r := range rows {
		for _, s := range []tracetest.SpanStub{r.Wait, r.Hold} {
			set := attribute.NewSet(s.Attributes...)
			kind, _ := set.Value(otelhooks.LockKindKey)
			permits, _ := set.Value(otelhooks.LockPermitsKey)
			if kind.AsString() != "semaphore" || permits.AsInt64() != exportLimit {
				return fmt.Errorf("%s: its %s span has lock.kind=%q, lock.permits=%d; want semaphore, %d",
					r.Worker, s.Name, kind.AsString(), permits.AsInt64(), exportLimit)
			}
		}
	}
	return nil
}

// busiestExports returns how many export work spans, done under a permit,
// were open at once at the busiest moment, and an error if that is more
// than the limit or if there are not as many as requests.
func busiestExports(spans tracetest.SpanStubs) (int, error) {
	type edge struct {
		at time.Time
		d  int // +1 a start, -1 an end
	}
	var edges []edge
	for _, s := range spans {
		if s.Name == exportWorkSpan {
			edges = append(edges, edge{s.StartTime, +1}, edge{s.EndTime, -1})
		}
	}
	if len(edges) != 2*exportRequests {
		return 0, fmt.Errorf("%d %q spans, want %d", len(edges)/2, exportWorkSpan, exportRequests)
	}
	// By time; at the same instant an end before a start: touching is not
	// overlapping.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	open, busiest := 0, 0
	for _, e := range edges {
		open += e.d
		busiest = max(busiest, open)
	}
	if busiest > exportLimit {
		return busiest, fmt.Errorf("%d %q spans overlap: more than %d exports at once", busiest, exportWorkSpan, exportLimit)
	}
	return busiest, nil
}
