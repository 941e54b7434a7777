package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watched is one watch JSON line.
type watched struct {
	Event  string `json:"event"`
	Field  string `json:"field"`
	From   string `json:"from"`
	Token  string `json:"token"`
	Detail string `json:"detail"`
}

// watchRun is a running "rlock watch".
type watchRun struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer // read after Wait only
	events chan watched // closed when stdout ends
	seen   []watched
}

// startWatchCmd starts the binary with a, stderr to stderr (nil: none),
// and returns a scanner of its stdout.
func startWatchCmd(t *testing.T, stderr io.Writer, a ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, a...)
	cmd.Env = append(os.Environ(), "REDIS_URL=", "REDIS_PASSWORD=")
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a no-op once it has exited
	return cmd, bufio.NewScanner(out)
}

// startWatch starts "watch -json -interval 20ms name".
func startWatch(t *testing.T, conn []string, name string) *watchRun {
	t.Helper()
	w := &watchRun{events: make(chan watched, 100)}
	var sc *bufio.Scanner
	w.cmd, sc = startWatchCmd(t, &w.stderr, args(conn, "-json", "watch", "-interval", "20ms", name)...)
	go func() {
		defer close(w.events)
		for sc.Scan() {
			var e watched
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				w.events <- e
			}
		}
	}()
	return w
}

// next returns the next event of one of the kinds, skipping others, and
// fails if none comes within a generous bound.
func (w *watchRun) next(t *testing.T, kinds ...string) watched {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-w.events:
			require.True(t, ok, "watch ended early; events: %+v", w.seen)
			w.seen = append(w.seen, e)
			if slices.Contains(kinds, e.Event) {
				return e
			}
		case <-timer.C:
			t.Fatalf("no %v within 20s; events: %+v", kinds, w.seen)
		}
	}
}

// interrupt sends SIGINT and returns the exit code.
func (w *watchRun) interrupt(t *testing.T) int {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(os.Interrupt))
	for range w.events { // drain until stdout closes
	}
	err := w.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

func TestWatchReportsAcquireHandOffReleaseLossAndGivingUp(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			a, b := newClient(t, rdb), newClient(t, rdb)
			ctx := testsupport.Ctx(t)
			name := unique("watch:job:" + topo.name)
			ma, mb := a.Mutex(name), b.Mutex(name)
			w := startWatch(t, topo.flags(), name)
			w.next(t, "free")

			ha, err := ma.Lock(ctx)
			require.NoError(t, err)
			fa := holderOf(t, ma)
			assert.Equal(t, fa, w.next(t, "acquired").Field)
			got := waitLock(t, rdb, mb, 1)
			fb := queue(t, rdb, name)[0]
			assert.Equal(t, fb, w.next(t, "waiter_joined").Field)

			require.NoError(t, ma.Unlock(ha))
			hb := testsupport.Recv(t, got, 10*time.Second, "b's hold")
			require.NotNil(t, hb)
			e := w.next(t, "handed_over", "acquired", "released")
			assert.Equal(t, watched{Event: "handed_over", Field: fb, From: fa}, watched{Event: e.Event, Field: e.Field, From: e.From})
			require.NoError(t, mb.Unlock(hb))
			assert.Equal(t, fb, w.next(t, "released").Field)

			_, err = ma.TryLock(ctx, 0, 300*time.Millisecond) // a lease, never unlocked
			require.NoError(t, err)
			leased := w.next(t, "acquired").Field
			e = w.next(t, "lost", "released")
			assert.Equal(t, watched{Event: "lost", Field: leased}, watched{Event: e.Event, Field: e.Field}, e.Detail)

			hold, err := ma.Lock(ctx)
			require.NoError(t, err)
			w.next(t, "acquired")
			_, err = mb.TryLock(ctx, 1500*time.Millisecond, 0) // waits, then gives up
			require.Error(t, err)
			joined := w.next(t, "waiter_joined").Field
			e = w.next(t, "waiter_gave_up", "waiter_left")
			assert.Equal(t, joined, e.Field)
			if topo.name == "single node" {
				assert.Equal(t, "waiter_gave_up", e.Event, "hand-off messages tell giving up from holding")
			}
			require.NoError(t, ma.Unlock(hold))
			w.next(t, "released")

			assert.Equal(t, 0, w.interrupt(t), "interrupted is the normal end: %s", w.stderr.String())
			assert.Contains(t, w.stderr.String(), "watching "+name)
		})
	}
}

// The watcher subscribes to Redisson's channel with the roll-call channel,
// as rlock clients do, so that rlock does not take it for a waiting
// Redisson client (which would turn every fourth hand-off into an open
// release).
func TestWatchIsNotCountedAsARedissonWaiter(t *testing.T) {
	rdb := redisClient(t, "single node")
	name := unique("watch:counted")
	w := startWatch(t, onSingle(), name)
	w.next(t, "free")
	ctx := testsupport.Ctx(t)
	n, err := rdb.PubSubNumSub(ctx, "redisson_lock__channel:{"+name+"}", "rlock_handoff:{"+name+"}").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n["redisson_lock__channel:{"+name+"}"], "watch listens on Redisson's channel")
	assert.EqualValues(t, 1, n["rlock_handoff:{"+name+"}"], "and on the roll-call channel with it")
	assert.Equal(t, 0, w.interrupt(t))
}
