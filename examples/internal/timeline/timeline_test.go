package timeline_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/examples/internal/timeline"
	"github.com/go-rlock/rlock/otelhooks"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// spans builds the spans otelhooks records for one worker, in trace n: a
// root span named worker, its lock.wait from waitFrom to holdFrom, linking to
// the span link if valid, and its lock.hold from holdFrom to holdTo. It
// returns the spans and the lock.hold span's context, for another wait to
// link to.
func spans(n byte, worker string, waitFrom, holdFrom, holdTo int, link oteltrace.SpanContext) (tracetest.SpanStubs, oteltrace.SpanContext) {
	sc := func(span byte) oteltrace.SpanContext {
		return oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
			TraceID:    oteltrace.TraceID{n},
			SpanID:     oteltrace.SpanID{n, span},
			TraceFlags: oteltrace.FlagsSampled,
		})
	}
	root, wait, hold := sc(1), sc(2), sc(3)
	var links []trace.Link
	if link.IsValid() {
		links = []trace.Link{{SpanContext: link}}
	}
	return tracetest.SpanStubs{
		{Name: worker, SpanContext: root, StartTime: at(waitFrom), EndTime: at(holdTo)},
		{Name: otelhooks.WaitSpanName, SpanContext: wait, Parent: root, StartTime: at(waitFrom), EndTime: at(holdFrom), Links: links},
		{Name: otelhooks.HoldSpanName, SpanContext: hold, Parent: root, StartTime: at(holdFrom), EndTime: at(holdTo)},
	}, hold
}

// contention is three workers taking a lock one after the other, with the
// spans in no particular order and an unrelated trace among them.
func contention() tracetest.SpanStubs {
	one, hold1 := spans(1, "worker-1", 0, 0, 100, oteltrace.SpanContext{})
	two, hold2 := spans(2, "worker-2", 10, 100, 200, hold1)
	three, _ := spans(3, "worker-3", 20, 200, 300, hold2)
	other, _ := spans(4, "cleanup", 0, 50, 60, oteltrace.SpanContext{})
	return append(append(append(three, other...), one...), two...)
}

func TestRows(t *testing.T) {
	t.Parallel()

	t.Run("finds each worker's wait and hold and whose hold its wait links to, sorted by worker", func(t *testing.T) {
		t.Parallel()
		rows, err := timeline.Rows(contention())
		require.NoError(t, err)
		var got []string
		for _, r := range rows {
			require.Equal(t, otelhooks.WaitSpanName, r.Wait.Name)
			require.Equal(t, otelhooks.HoldSpanName, r.Hold.Name)
			require.Equal(t, r.Wait.SpanContext.TraceID(), r.Hold.SpanContext.TraceID())
			got = append(got, r.Worker+"<-"+r.LinkedTo+" "+r.Hold.StartTime.Sub(t0).String())
		}
		require.Equal(t, []string{"worker-1<- 0s", "worker-2<-worker-1 100ms", "worker-3<-worker-2 200ms"}, got)
	})

	for _, tc := range []struct {
		drop   string
		trace  byte
		worker string
	}{
		{otelhooks.HoldSpanName, 2, "worker-2"},
		{otelhooks.WaitSpanName, 3, "worker-3"},
	} {
		t.Run("a worker without its "+tc.drop+" span is an error naming it", func(t *testing.T) {
			t.Parallel()
			var spans tracetest.SpanStubs
			for _, s := range contention() {
				if s.Name != tc.drop || s.SpanContext.TraceID() != (oteltrace.TraceID{tc.trace}) {
					spans = append(spans, s)
				}
			}
			_, err := timeline.Rows(spans)
			require.ErrorContains(t, err, tc.worker+": its lock.wait or lock.hold span is missing")
		})
	}

	t.Run("RowsOf takes the workers' prefix: instance- finds the instances, not the workers", func(t *testing.T) {
		t.Parallel()
		one, hold1 := spans(1, "instance-1", 0, 0, 100, oteltrace.SpanContext{})
		two, _ := spans(2, "instance-2", 10, 100, 200, hold1)
		rows, err := timeline.RowsOf(append(append(one, two...), contention()...), "instance-")
		require.NoError(t, err)
		require.Len(t, rows, 2)
		require.Equal(t, "instance-1", rows[0].Worker)
		require.Equal(t, "instance-1", rows[1].LinkedTo)
	})

	t.Run("a worker that waits and holds twice keeps every span, in the order they began", func(t *testing.T) {
		t.Parallel()
		first, _ := spans(1, "worker-1", 0, 0, 100, oteltrace.SpanContext{})
		again, _ := spans(1, "worker-1", 150, 200, 300, oteltrace.SpanContext{})
		for i := range again { // the same trace, other span IDs
			again[i].SpanContext = again[i].SpanContext.WithSpanID(oteltrace.SpanID{1, byte(i + 10)})
			again[i].Parent = first[0].SpanContext
		}
		again = again[1:] // one root span
		rows, err := timeline.Rows(append(again, first...))
		require.NoError(t, err)
		require.Len(t, rows, 1)
		r := rows[0]
		require.Equal(t, at(0), r.Wait.StartTime)
		require.Equal(t, at(0), r.Hold.StartTime)
		require.Len(t, r.MoreWaits, 1)
		require.Len(t, r.MoreHolds, 1)
		require.Equal(t, at(150), r.MoreWaits[0].StartTime)
		require.Equal(t, at(200), r.MoreHolds[0].StartTime)

		var b strings.Builder
		require.NoError(t, timeline.Draw(&b, rows, "t", timeline.Format{Columns: 6}))
		require.Contains(t, b.String(), "\nworker-1 |## .##| waited  50ms, held 200ms\n")
	})

	t.Run("no worker spans give no rows", func(t *testing.T) {
		t.Parallel()
		other, _ := spans(4, "cleanup", 0, 50, 60, oteltrace.SpanContext{})
		rows, err := timeline.Rows(other)
		require.NoError(t, err)
		require.Empty(t, rows)
	})
}

func TestDraw(t *testing.T) {
	t.Parallel()
	rows, err := timeline.Rows(contention())
	require.NoError(t, err)

	t.Run("draws each row on a common scale, with indent, name width and link note", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		err := timeline.Draw(&b, rows, "  timeline of x", timeline.Format{Columns: 10, Indent: "  ", NameWidth: 9, Link: ", after %s"})
		require.NoError(t, err)
		require.Equal(t, ""+
			"  timeline of x, 30ms per column: '.' waiting, '#' holding\n"+
			"  worker-1  |###       | waited   0ms, held 100ms\n"+
			"  worker-2  |...####   | waited  90ms, held 100ms, after worker-1\n"+
			"  worker-3  | ......###| waited 180ms, held 100ms, after worker-2\n",
			b.String())
	})

	t.Run("a legend replaces the default one", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		require.NoError(t, timeline.Draw(&b, rows, "t", timeline.Format{Columns: 10, Legend: "'.' campaigning, '#' leading"}))
		require.True(t, strings.HasPrefix(b.String(), "t, 30ms per column: '.' campaigning, '#' leading\n"), b.String())
	})

	t.Run("a worker that died holds with 'x' from then on", func(t *testing.T) {
		t.Parallel()
		one, _ := spans(1, "worker-1", 0, 0, 100, oteltrace.SpanContext{})
		rows, err := timeline.Rows(one)
		require.NoError(t, err)
		rows[0].Died = at(60)
		var b strings.Builder
		require.NoError(t, timeline.Draw(&b, rows, "t", timeline.Format{Columns: 10}))
		require.Contains(t, b.String(), "\nworker-1 |######xxxx| waited   0ms, held 100ms\n")
	})

	t.Run("an empty link format leaves the link out", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		require.NoError(t, timeline.Draw(&b, rows, "t", timeline.Format{Columns: 10}))
		require.Contains(t, b.String(), "\nworker-2 |...####   | waited  90ms, held 100ms\n")
	})

	t.Run("columns must be positive", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{0, -1} {
			err := timeline.Draw(&strings.Builder{}, rows, "t", timeline.Format{Columns: n})
			require.ErrorContains(t, err, "columns, want a positive number")
		}
	})

	t.Run("a write error is returned", func(t *testing.T) {
		t.Parallel()
		err := timeline.Draw(failingWriter{}, rows, "t", timeline.Format{Columns: 10})
		require.ErrorIs(t, err, errWrite)
	})
}

var errWrite = errors.New("write failed")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func ExampleDraw() {
	one, hold1 := spans(1, "worker-1", 0, 0, 120, oteltrace.SpanContext{})
	two, _ := spans(2, "worker-2", 20, 120, 240, hold1)
	rows, err := timeline.Rows(append(one, two...))
	if err != nil {
		panic(err)
	}
	err = timeline.Draw(os.Stdout, rows, "# timeline", timeline.Format{Columns: 24, NameWidth: 8, Link: ", waited for %s"})
	if err != nil {
		panic(err)
	}
	// Output:
	// # timeline, 10ms per column: '.' waiting, '#' holding
	// worker-1 |############            | waited   0ms, held 120ms
	// worker-2 |  ..........############| waited 100ms, held 120ms, waited for worker-1
}
