//go:build unix

package reliability_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPausedHolderIsFencedOff is scenario 2: a holder process frozen with
// SIGSTOP past its watchdog timeout loses the lock to another process; when
// it wakes, its hold context is cancelled at once with ErrLockLost, its write
// guarded by the fencing token is rejected and its Unlock fails with
// ErrLockLost without touching the new holder's lock.
func TestPausedHolderIsFencedOff(t *testing.T) {
	t.Parallel()
	const (
		watchdog = time.Second
		name     = "paused-holder"
		resource = "resource:paused-holder"
	)
	bin := workerBinary(t)
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 30*time.Second)

	w := startHolder(t, bin, "-addr", srv.Addr(), "-name", name, "-resource", resource, "-watchdog", watchdog.String())
	staleTok, err := strconv.ParseInt(w.expect("HELD "), 10, 64)
	require.NoError(t, err)
	w.send("write")
	assert.Equal(t, "accepted", w.expect("WRITE "), "the holder writes while it holds")

	// Freeze the holder past its watchdog timeout: its key expires and this
	// process, another owner, takes the lock.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGSTOP)) // by pidfd: never a reused pid
	stopped := time.Now()
	c := lockmw.New(srv.NewClient(), lockmw.WithWatchdogTimeout(watchdog))
	defer c.Close()
	m := c.Mutex(name, lockmw.WithFencing())
	hctx, err := m.TryLock(ctx, 5*watchdog, 0)
	require.NoError(t, err, "the frozen holder's lock expires")
	took := time.Since(stopped)
	tok, _ := m.Token(hctx)
	assert.Greater(t, tok, staleTok, "a newer token")
	ok, err := reliability.GuardedWrite(ctx, srv.Client(), resource, tok, "new holder")
	require.NoError(t, err)
	require.True(t, ok)
	// Keep it frozen past its watchdog timeout, counted from the freeze.
	time.Sleep(time.Until(stopped.Add(watchdog + watchdog/5))) // the length of the freeze

	// Wake it. A goroutine that was about to write when it froze writes
	// at once, without looking at its context: the token stops it.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGCONT))
	woke := time.Now()
	w.send("write")
	var lostAfter time.Duration
	for range 2 {
		line := w.line(5 * time.Second)
		switch {
		case strings.HasPrefix(line, "LOST "):
			lostAfter = time.Since(woke)
			assert.True(t, strings.HasPrefix(line, "LOST true "), "the hold context's cause is ErrLockLost: %s", line)
		case strings.HasPrefix(line, "WRITE "):
			assert.Equal(t, "WRITE rejected", line, "the stale token is fenced off")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	require.NotZero(t, lostAfter, "the stale holder was told")
	assert.Less(t, lostAfter, watchdog/2, "told promptly: the loss was overdue when it woke")
	w.send("unlock")
	assert.True(t, strings.HasPrefix(w.expect("UNLOCK "), "true "), "the stale Unlock fails with ErrLockLost")

	// The new holder's lock and write are untouched.
	n, err := m.HoldCount(hctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoError(t, context.Cause(hctx))
	v, err := srv.Client().HGet(ctx, resource, "value").Result()
	require.NoError(t, err)
	assert.Equal(t, "new holder", v)
	require.NoError(t, m.Unlock(hctx))
	w.stop()
	t.Logf("paused holder: frozen for %v; another process held the lock %v after the freeze (watchdog %v); the stale holder was told %v after waking",
		woke.Sub(stopped).Round(time.Millisecond), took.Round(time.Millisecond), watchdog, lostAfter.Round(time.Microsecond))
}

// holder is a worker process in hold mode.
type holder struct {
	t     *testing.T
	pid   int
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has been reaped
	err   error         // cmd.Wait's
}

func startHolder(t *testing.T, bin string, args ...string) *holder {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"hold"}, args...)...)
	cmd.SysProcAttr = sysProcAttr()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	h := &holder{t: t, pid: cmd.Process.Pid, cmd: cmd, in: in, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.err = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // ErrProcessDone once reaped, never a reused pid
		_ = in.Close()
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("holder stderr:\n%s", stderr.String())
		}
	})
	return h
}

func (h *holder) send(line string) {
	_, err := io.WriteString(h.in, line+"\n")
	require.NoError(h.t, err)
}

// line returns the next line the holder prints, waiting at most d.
func (h *holder) line(d time.Duration) string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		require.True(h.t, ok, "the holder exited")
		return l
	case <-time.After(d):
		h.t.Fatalf("the holder printed nothing for %v", d)
		return ""
	}
}

// expect returns the rest of the next line, which must start with prefix.
func (h *holder) expect(prefix string) string {
	h.t.Helper()
	l := h.line(10 * time.Second)
	rest, ok := strings.CutPrefix(l, prefix)
	require.True(h.t, ok, "want a line starting with %q, got %q", prefix, l)
	return rest
}

// stop closes the holder's input and waits for it to exit cleanly.
func (h *holder) stop() {
	h.t.Helper()
	require.NoError(h.t, h.in.Close())
	for range h.lines { // the LOST line of Close, if the hold was still on
	}
	testsupport.Recv(h.t, h.done, 10*time.Second, "the holder exits")
	assert.NoError(h.t, h.err, "the holder exits cleanly")
}
