// Package timeline turns the lock.wait and lock.hold spans that otelhooks
// records for a few workers contending for one lock into a text timeline:
// one row per worker, '.' while it waits, '#' while it holds.
//
// It expects each worker's spans in a trace of their own, under a root span
// named after the worker ("worker-1", "worker-2", …), as examples/tracing and
// examples/demo record them; [RowsOf] takes another prefix ("instance-" for
// the leaders of examples/demo, whose '#' is a term and '.' a campaign). A
// worker may wait and hold more than once (a leader that lost its term
// campaigns again): its row shows every wait and hold.
package timeline

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/otelhooks"
)

// workerPrefix begins the name of a worker's root span, for Rows.
const workerPrefix = "worker-"

// Row is one worker's lock.wait and lock.hold spans.
type Row struct {
	Worker     string             // the name of the worker's root span
	Wait, Hold tracetest.SpanStub // its first otelhooks.WaitSpanName and otelhooks.HoldSpanName spans
	// MoreWaits and MoreHolds are its later lock.wait and lock.hold spans, in
	// the order they began; usually none.
	MoreWaits, MoreHolds []tracetest.SpanStub
	LinkedTo             string // the worker whose hold the first wait span links to, or ""
	// Died, when set by the caller, is when the worker crashed: its holds
	// from then on (until its lock expires) are drawn 'x'.
	Died time.Time
}

// waits returns all the row's wait spans, holds all its hold spans.
func (r *Row) waits() []tracetest.SpanStub {
	return append([]tracetest.SpanStub{r.Wait}, r.MoreWaits...)
}
func (r *Row) holds() []tracetest.SpanStub {
	return append([]tracetest.SpanStub{r.Hold}, r.MoreHolds...)
}

// Rows finds each worker's spans among spans: a root span whose name begins
// with "worker-" names a worker, and the lock.wait and lock.hold spans in
// its trace are the worker's. It resolves the first wait span's link to the
// worker whose lock.hold span it points at. The rows are sorted by worker
// name; it returns an error if a worker lacks a lock.wait or lock.hold span.
func Rows(spans tracetest.SpanStubs) ([]*Row, error) {
	return RowsOf(spans, workerPrefix)
}

// RowsOf is Rows for root spans whose names begin with prefix instead of
// "worker-".
func RowsOf(spans tracetest.SpanStubs, prefix string) ([]*Row, error) {
	type found struct {
		worker      string
		waits, hold []tracetest.SpanStub
	}
	byTrace := map[trace.TraceID]*found{}
	for _, s := range spans {
		if !s.Parent.IsValid() && strings.HasPrefix(s.Name, prefix) {
			byTrace[s.SpanContext.TraceID()] = &found{worker: s.Name}
		}
	}
	holderOf := map[trace.SpanID]string{} // lock.hold span -> worker
	for _, s := range spans {
		f := byTrace[s.SpanContext.TraceID()]
		switch {
		case f == nil:
		case s.Name == otelhooks.WaitSpanName:
			f.waits = append(f.waits, s)
		case s.Name == otelhooks.HoldSpanName:
			f.hold = append(f.hold, s)
			holderOf[s.SpanContext.SpanID()] = f.worker
		}
	}
	rows := make([]*Row, 0, len(byTrace))
	for _, f := range byTrace {
		if len(f.waits) == 0 || len(f.hold) == 0 {
			return nil, fmt.Errorf("%s: its %s or %s span is missing", f.worker, otelhooks.WaitSpanName, otelhooks.HoldSpanName)
		}
		byStart := func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) }
		slices.SortFunc(f.waits, byStart)
		slices.SortFunc(f.hold, byStart)
		r := &Row{Worker: f.worker, Wait: f.waits[0], Hold: f.hold[0], MoreWaits: f.waits[1:], MoreHolds: f.hold[1:]}
		for _, l := range r.Wait.Links {
			if w, ok := holderOf[l.SpanContext.SpanID()]; ok {
				r.LinkedTo = w
			}
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *Row) int { return strings.Compare(a.Worker, b.Worker) })
	return rows, nil
}

// Format is how Draw lays a timeline out.
type Format struct {
	Columns   int    // the width of each row's bar, in characters; must be positive
	Indent    string // written before each row
	NameWidth int    // the worker names are padded to this width
	Link      string // the note for a wait span's link, with %s for the worker it links to; "" for none
	Legend    string // what '.' and '#' mean, after the title; "" for "'.' waiting, '#' holding"
}

// defaultLegend is the legend of a Format without one.
const defaultLegend = "'.' waiting, '#' holding"

// Draw writes to w a title line, title followed by the time one column
// stands for and the legend, then one line per row on a common time scale:
// the worker, a bar with '.' while it waits and '#' while it holds ('x'
// once it died; each column shows the state at its middle), how long it
// waited and held in all, and the link note.
func Draw(w io.Writer, rows []*Row, title string, f Format) error {
	if f.Columns <= 0 {
		return fmt.Errorf("timeline: %d columns, want a positive number", f.Columns)
	}
	var t0, t1 time.Time
	for _, r := range rows {
		for _, s := range append(r.waits(), r.holds()...) {
			if t0.IsZero() || s.StartTime.Before(t0) {
				t0 = s.StartTime
			}
			if s.EndTime.After(t1) {
				t1 = s.EndTime
			}
		}
	}
	col := t1.Sub(t0) / time.Duration(f.Columns)
	legend := f.Legend
	if legend == "" {
		legend = defaultLegend
	}
	if _, err := fmt.Fprintf(w, "%s, %v per column: %s\n", title, col.Round(time.Millisecond), legend); err != nil {
		return err
	}
	for _, r := range rows {
		link := ""
		if r.LinkedTo != "" && f.Link != "" {
			link = fmt.Sprintf(f.Link, r.LinkedTo)
		}
		if _, err := fmt.Fprintf(w, "%s%-*s |%s| waited %3dms, held %3dms%s\n", f.Indent, f.NameWidth, r.Worker,
			r.bar(t0, col, f.Columns), total(r.waits()).Milliseconds(), total(r.holds()).Milliseconds(), link); err != nil {
			return err
		}
	}
	return nil
}

// bar draws the row in columns of col from t0.
func (r *Row) bar(t0 time.Time, col time.Duration, columns int) string {
	var b strings.Builder
	for i := range columns {
		t := t0.Add(col*time.Duration(i) + col/2) // the middle of the column
		switch {
		case within(t, r.holds()) && !r.Died.IsZero() && !t.Before(r.Died):
			b.WriteByte('x')
		case within(t, r.holds()):
			b.WriteByte('#')
		case within(t, r.waits()):
			b.WriteByte('.')
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// within reports whether t falls in one of spans.
func within(t time.Time, spans []tracetest.SpanStub) bool {
	for _, s := range spans {
		if !t.Before(s.StartTime) && t.Before(s.EndTime) {
			return true
		}
	}
	return false
}

// total is the spans' durations added up.
func total(spans []tracetest.SpanStub) time.Duration {
	var d time.Duration
	for _, s := range spans {
		d += s.EndTime.Sub(s.StartTime)
	}
	return d
}
