package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
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
	w.cmd = exec.Command(bin, args(conn, "watch", "-interval", "20ms", name)...)
	w.cmd.Env = append(os.Environ(), "REDIS_URL=", "REDIS_PASSWORD=")
	out, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { _ = w.cmd.Process.Kill() }) // a no-op once it has exited
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(out)
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

// handedOver is the end of a hand-off line: its gap as each topology's
// watch knows it (a hand-off message on a single node, polling on a
// cluster).
var handedOver = map[string]string{
	"single node":      "gap 0s (released and granted in one script)",
	"3-master cluster": "gap ≤ D (seen by polling: the poll's precision)",
}

// Two rlock Clients hand a mutex over while watch runs: the transcript
// reads in order, one line per event, the hand-off one line with its gap.
func TestWatchTranscriptOfAMutexHandOff(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			a := newClient(t, rdb, lockmw.WithClientID("svc-a"))
			b := newClient(t, rdb, lockmw.WithClientID("svc-b"))
			name := unique("golden:mutex:" + topo.name)
			ma, mb := a.Mutex(name), b.Mutex(name)
			w := startTextWatch(t, topo.flags(), name)
			w.until(t, "free")

			ha, err := ma.Lock(testsupport.Ctx(t))
			require.NoError(t, err)
			w.until(t, "acquired")
			got := waitLock(t, rdb, mb, 1)
			w.until(t, "waiter joined")
			require.NoError(t, ma.Unlock(ha))
			hb := testsupport.Recv(t, got, 10*time.Second, "b's hold")
			require.NotNil(t, hb)
			w.until(t, "handed over")
			require.NoError(t, mb.Unlock(hb))
			w.until(t, "released")

			assert.Equal(t, []string{
				"NAME  free",
				"NAME  acquired  svc-a:1  (expires in D unless renewed)",
				"NAME  waiter joined  svc-b:1  (queue entry expires TIME)",
				"NAME  handed over  svc-a:1 → svc-b:1  " + handedOver[topo.name] + "  after a hold of D",
				"NAME  released  svc-b:1  held D",
			}, w.stop(t))
		})
	}
}

// A reader hands a read-write lock over to a queued writer, who hands it
// back to a queued reader: each hand-off is one line naming the holders'
// fields (the writer's with ":write"), never a release of the new holder.
func TestWatchTranscriptOfAReadWriteHandOff(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			a := newClient(t, rdb, lockmw.WithClientID("svc-a"))
			b := newClient(t, rdb, lockmw.WithClientID("svc-b"))
			name := unique("golden:rw:" + topo.name)
			ra, rb := a.RWMutex(name), b.RWMutex(name)
			w := startTextWatch(t, topo.flags(), name)
			w.until(t, "free")

			r1, err := ra.RLock(testsupport.Ctx(t))
			require.NoError(t, err)
			w.until(t, "acquired")
			writer := waitRW(t, rdb, name, 1, rb.Lock)
			w.until(t, "waiter joined")
			require.NoError(t, ra.RUnlock(r1))
			hw := testsupport.Recv(t, writer, 10*time.Second, "the writer's hold")
			require.NotNil(t, hw)
			w.until(t, "handed over")

			reader := waitRW(t, rdb, name, 1, ra.RLock)
			w.until(t, "waiter joined")
			require.NoError(t, rb.Unlock(hw))
			r2 := testsupport.Recv(t, reader, 10*time.Second, "the reader's hold")
			require.NotNil(t, r2)
			w.until(t, "handed over")
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
			}, w.stop(t))
		})
	}
}
