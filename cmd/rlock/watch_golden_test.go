package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textWatch is a running "rlock watch" printing text, its lines normalized
// (see normalize) as they come.
type textWatch struct {
	cmd   *exec.Cmd
	lines chan string // closed when stdout ends
	seen  []string
}

// startTextWatch starts "watch -interval 20ms name" (text).
func startTextWatch(t *testing.T, conn []string, name string) *textWatch {
	t.Helper()
	w := &textWatch{lines: make(chan string, 100)}
	var sc *bufio.Scanner
	w.cmd, sc = startWatchCmd(t, nil, args(conn, "watch", "-interval", "20ms", name)...)
	go func() {
		defer close(w.lines)
		for sc.Scan() {
			w.lines <- normalize(sc.Text(), name)
		}
	}()
	return w
}

// until returns once a line containing s has come, and fails if none comes
// within a generous bound.
func (w *textWatch) until(t *testing.T, s string) {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-w.lines:
			require.True(t, ok, "watch ended early; lines:\n%s", strings.Join(w.seen, "\n"))
			w.seen = append(w.seen, l)
			if strings.Contains(l, s) {
				return
			}
		case <-timer.C:
			t.Fatalf("no line with %q within 20s; lines:\n%s", s, strings.Join(w.seen, "\n"))
		}
	}
}

// stop interrupts watch and returns every line it printed.
func (w *textWatch) stop(t *testing.T) []string {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(os.Interrupt))
	for l := range w.lines {
		w.seen = append(w.seen, l)
	}
	require.NoError(t, w.cmd.Wait(), "interrupted is the normal end")
	return w.seen
}

// What varies from run to run in a transcript: the time watch saw a change,
// the server's times and the durations left, a polled gap, how long a hold
// lasted.
var (
	lineTime   = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  `)
	serverTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	expiresIn  = regexp.MustCompile(`expires in [0-9.]+(ms|s|m)+ unless renewed`)
	polledGap  = regexp.MustCompile(`gap ≤ [0-9.]+(µs|ms|s)`)
	heldFor    = regexp.MustCompile(`(held|after a hold of) [0-9.]+(µs|ms|s|m)+`)
)

// normalize replaces what varies in a line of a transcript of name.
func normalize(l, name string) string {
	l = lineTime.ReplaceAllString(l, "")
	l = strings.ReplaceAll(l, name, "NAME")
	l = serverTime.ReplaceAllString(l, "TIME")
	l = expiresIn.ReplaceAllString(l, "expires in D unless renewed")
	l = polledGap.ReplaceAllString(l, "gap ≤ D")
	return heldFor.ReplaceAllString(l, "$1 D")
}

// golden is a transcript's set-up: two Clients ("svc-a", "svc-b") on the
// topology and a text watch of a fresh name, past its "free" line.
type golden struct {
	rdb  redis.UniversalClient
	a, b *lockmw.Client
	name string
	w    *textWatch
}

// newGolden sets a transcript of a name of kind up.
func newGolden(t *testing.T, topo string, conn []string, kind string) golden {
	t.Helper()
	g := golden{rdb: redisClient(t, topo), name: unique("golden:" + kind + ":" + topo)}
	g.a = newClient(t, g.rdb, lockmw.WithClientID("svc-a"))
	g.b = newClient(t, g.rdb, lockmw.WithClientID("svc-b"))
	g.w = startTextWatch(t, conn, g.name)
	g.w.until(t, "free")
	return g
}

// handOver releases a hold by unlock, returns the hold its waiter got
// (from got), once watch told the hand-off.
func (g golden) handOver(t *testing.T, unlock func() error, got <-chan context.Context) context.Context {
	t.Helper()
	require.NoError(t, unlock())
	h := testsupport.Recv(t, got, 10*time.Second, "the waiter's hold")
	require.NotNil(t, h)
	g.w.until(t, "handed over")
	return h
}

// handedOver is the end of a hand-off line: its gap as each topology's
// watch knows it (a hand-off message on a single node, polling on a
// cluster).
var handedOver = map[string]string{
	"single node":      "gap 0s (released and granted in one script)",
	"3-master cluster": "gap ≤ D (seen by polling: the poll's precision)",
}

// stopped is w.stop's transcript, where on a single node a hand-off told as
// polled reads as its message would have told it: a message that came
// after the watch's patience (messageWait, on a loaded machine) leaves the
// hand-off told by the poll that saw it, once; which path told it is
// logged, not judged.
func stopped(t *testing.T, topo string, w *textWatch) []string {
	lines := w.stop(t)
	if topo != "single node" {
		return lines
	}
	for i, l := range lines {
		if strings.Contains(l, handedOver["3-master cluster"]) {
			t.Logf("a hand-off's message came after the watch's patience, told as polled: %s", l)
			lines[i] = strings.Replace(l, handedOver["3-master cluster"], handedOver["single node"], 1)
		}
	}
	return lines
}

// Two rlock Clients hand a mutex over while watch runs: the transcript
// reads in order, one line per event, the hand-off one line with its gap.
func TestWatchTranscriptOfAMutexHandOff(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			g := newGolden(t, topo.name, topo.flags(), "mutex")
			rdb, w, name := g.rdb, g.w, g.name
			ma, mb := g.a.Mutex(name), g.b.Mutex(name)

			ha, err := ma.Lock(testsupport.Ctx(t))
			require.NoError(t, err)
			w.until(t, "acquired")
			got := waitLock(t, rdb, mb, 1)
			w.until(t, "waiter joined")
			hb := g.handOver(t, func() error { return ma.Unlock(ha) }, got)
			require.NoError(t, mb.Unlock(hb))
			w.until(t, "released")

			assert.Equal(t, []string{
				"NAME  free",
				"NAME  acquired  svc-a:1  (expires in D unless renewed)",
				"NAME  waiter joined  svc-b:1  (queue entry expires TIME)",
				"NAME  handed over  svc-a:1 → svc-b:1  " + handedOver[topo.name] + "  after a hold of D",
				"NAME  released  svc-b:1  held D",
			}, stopped(t, topo.name, w))
		})
	}
}

// A reader hands a read-write lock over to a queued writer, who hands it
// back to a queued reader: each hand-off is one line naming the holders'
// fields (the writer's with ":write"), never a release of the new holder.
func TestWatchTranscriptOfAReadWriteHandOff(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			g := newGolden(t, topo.name, topo.flags(), "rw")
			rdb, w, name := g.rdb, g.w, g.name
			ra, rb := g.a.RWMutex(name), g.b.RWMutex(name)

			r1, err := ra.RLock(testsupport.Ctx(t))
			require.NoError(t, err)
			w.until(t, "acquired")
			writer := waitRW(t, rdb, name, 1, rb.Lock)
			w.until(t, "waiter joined")
			hw := g.handOver(t, func() error { return ra.RUnlock(r1) }, writer)

			reader := waitRW(t, rdb, name, 1, ra.RLock)
			w.until(t, "waiter joined")
			r2 := g.handOver(t, func() error { return rb.Unlock(hw) }, reader)
			require.NoError(t, ra.RUnlock(r2))
			w.until(t, "released")

			assert.Equal(t, []string{
				"NAME  free",
				"NAME  acquired  svc-a:1  (expires in D unless renewed)",
				"NAME  waiter joined  svc-b:1:write  (queue entry expires TIME)",
				"NAME  handed over  svc-a:1 → svc-b:1:write  " + handedOver[topo.name] + "  after a hold of D",
				"NAME  waiter joined  svc-a:2  (queue entry expires TIME)",
				"NAME  handed over  svc-b:1:write → svc-a:2  " + handedOver[topo.name] + "  after a hold of D",
				"NAME  released  svc-a:2  held D",
			}, stopped(t, topo.name, w))
		})
	}
}
