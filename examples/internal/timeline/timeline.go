// Package timeline turns the lock.wait and lock.hold spans that otelhooks
// records for a few workers contending for one lock into a text timeline:
// one row per worker, '.' while it waits, '#' while it holds.
//
// It expects each worker's spans in a trace of their own, under a root span
// named after the worker ("worker-1", "worker-2", …), as examples/tracing and
// examples/demo record them; [RowsOf] takes another prefix ("instance-" for
// the leaders of examples/demo, whose '#' is a term and '.' a campaign).
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
	Wait, Hold tracetest.SpanStub // its otelhooks.WaitSpanName and otelhooks.HoldSpanName spans
	LinkedTo   string             // the worker whose hold the wait span links to, or ""
	// Died, when set by the caller, is when the worker crashed: its hold
	// from then on (until its lock expires) is drawn 'x'.
	Died time.Time
}

// Rows finds each worker's spans among spans: a root span whose name begins
// with "worker-" names a worker, and the lock.wait and lock.hold spans in
// its trace are the worker's. It resolves the wait span's link to the worker
// whose lock.hold span it points at. The rows are sorted by worker name; it
// returns an error if a worker lacks its lock.wait or lock.hold span.
func Rows(spans tracetest.SpanStubs) ([]*Row, error) {
	return RowsOf(spans, workerPrefix)
}

// RowsOf is Rows for root spans whose names begin with prefix instead of
// "worker-".
func RowsOf(spans tracetest.SpanStubs, prefix string) ([]*Row, error) {
	byTrace := map[trace.TraceID]*Row{}
	for _, s := range spans {
		if !s.Parent.IsValid() && strings.HasPrefix(s.Name, prefix) {
			byTrace[s.SpanContext.TraceID()] = &Row{Worker: s.Name}
		}
	}
	holderOf := map[trace.SpanID]string{} // lock.hold span -> worker
	for _, s := range spans {
		r := byTrace[s.SpanContext.TraceID()]
		if r == nil {
			continue
		}
		switch s.Name {
		case otelhooks.WaitSpanName:
			r.Wait = s
		case otelhooks.HoldSpanName:
			r.Hold = s
			holderOf[s.SpanContext.SpanID()] = r.Worker
		}
	}
	rows := make([]*Row, 0, len(byTrace))
	for _, r := range byTrace {
		if r.Wait.Name == "" || r.Hold.Name == "" {
			return nil, fmt.Errorf("%s: its %s or %s span is missing", r.Worker, otelhooks.WaitSpanName, otelhooks.HoldSpanName)
		}
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
// waited and held, and the link note.
func Draw(w io.Writer, rows []*Row, title string, f Format) error {
	if f.Columns <= 0 {
		return fmt.Errorf("timeline: %d columns, want a positive number", f.Columns)
	}
	var t0, t1 time.Time
	for _, r := range rows {
		if t0.IsZero() || r.Wait.StartTime.Before(t0) {
			t0 = r.Wait.StartTime
		}
		if r.Hold.EndTime.After(t1) {
			t1 = r.Hold.EndTime
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
		var b strings.Builder
		for i := range f.Columns {
			t := t0.Add(col*time.Duration(i) + col/2) // the middle of the column
			switch {
			case !t.Before(r.Hold.StartTime) && t.Before(r.Hold.EndTime):
				if !r.Died.IsZero() && !t.Before(r.Died) {
					b.WriteByte('x')
				} else {
					b.WriteByte('#')
				}
			case !t.Before(r.Wait.StartTime) && t.Before(r.Wait.EndTime):
				b.WriteByte('.')
			default:
				b.WriteByte(' ')
			}
		}
		link := ""
		if r.LinkedTo != "" && f.Link != "" {
			link = fmt.Sprintf(f.Link, r.LinkedTo)
		}
		if _, err := fmt.Fprintf(w, "%s%-*s |%s| waited %3dms, held %3dms%s\n", f.Indent, f.NameWidth, r.Worker, b.String(),
			r.Wait.EndTime.Sub(r.Wait.StartTime).Milliseconds(), r.Hold.EndTime.Sub(r.Hold.StartTime).Milliseconds(), link); err != nil {
			return err
		}
	}
	return nil
}
