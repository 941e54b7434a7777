package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// requireReport checks that the report has every section's header and
// summary line and the closing line.
func requireReport(t *testing.T, out string) {
	t.Helper()
	for i, s := range sections {
		require.Contains(t, out, fmt.Sprintf("== %d. %s\n", i+1, s.title))
	}
	require.Equal(t, len(sections)+1, strings.Count(out, "\n  => "), "a summary line per section, plus one for the second half of the HTTP section")
	require.Contains(t, out, "demo done in ")
	// What each section is about to show, in its own words.
	for _, want := range []string{
		"2 invoices sent once each",
		"5 concurrent requests, all 200 OK, run one at a time",
		"409 Conflict, Retry-After: 2",
		"hold count 1 → 2 → 3 → 2 → 1",
		"context.Cause(hctx) = lockmw: lock lost",
		"5 requests, all 200 OK; the \"build export\" spans show at most 2 exports at once",
		"lock.kind=semaphore, lock.permits=2",
		"3 terms, one at a time (the \"leading\" spans never overlap): taken over ",
		"after the crash (bound 1.2s), handed over ",
		"its campaign links to instance-",
	} {
		require.Contains(t, out, want)
	}
	// Each tick ran once; on a loaded machine every instance may have
	// skipped one (busy with the last tick's late run, or Redis not
	// answering within the lock timeout), which the summary says.
	require.Regexp(t, `4 ticks, \d runs: each tick ran (once|at most once \(.*\); every instance skipped tick )`, out)
	// The first worker holds first: its row starts with '#', after as many
	// '.' as a busy machine made its uncontended Lock take columns.
	require.Regexp(t, `worker-1 \|\.*#`, out)
	// The leader that crashed (instance-1, unless a loaded machine made it
	// lose its term first) led, then died holding: '#' then 'x'.
	require.Regexp(t, `instance-\d \|[ .#]*#x+ *\|`, out)
}

// The demo as make demo runs it: on the embedded Redis (or $REDIS_ADDR, when
// the environment sets it).
func TestRunEmbedded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), timeLimit)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	err := run(ctx, &out)
	t.Logf("%v:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	require.NoError(t, err)
	requireReport(t, out.String())
}

// The demo on a real redis-server, as with REDIS_ADDR set.
func TestDemoOnRedisServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeLimit)
	defer cancel()
	var out bytes.Buffer
	err := demo(ctx, &out, srv.NewClient(), "redis-server at "+srv.Addr())
	if err != nil {
		t.Log(out.String())
	}
	require.NoError(t, err)
	requireReport(t, out.String())
}

// A demo whose report cannot be written fails.
func TestWriteErrorFails(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	err := demo(t.Context(), failingWriter{}, srv.NewClient(), "nowhere")
	require.ErrorContains(t, err, "writing the report")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }
