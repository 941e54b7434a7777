//go:build linux

package asynqmw_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// crashWatchdog is the leaderproc processes' watchdog timeout: short, so
	// that the takeover after a kill is quick.
	crashWatchdog = 2 * time.Second
	// crashSlack is added to every bound on a delay, for a loaded machine.
	crashSlack = 5 * time.Second
	// tick is the interval of the periodic task.
	tick = time.Second
)

// Three processes run RunScheduler with the same "@every 1s" task: it is
// enqueued about once per second in all, each by the process whose term
// began last (one at a time; enqueues of two processes at least 0.5 s apart); when the
// leader is SIGKILLed, another process wins a term within the watchdog
// timeout plus one renewal interval, and its first enqueue follows within a
// tick.
func TestRunSchedulerCrash(t *testing.T) {
	t.Parallel()
	bin := buildLeaderproc(t)
	srv := redistest.Start(t)
	var log eventLog
	var procs []*leaderProc
	for range 3 {
		procs = append(procs, startLeaderproc(t, bin, srv.Addr(), &log))
	}

	testsupport.Eventually(t, 30*time.Second, "three enqueues", func() bool { return len(log.enqueues()) >= 3 })
	enq := log.enqueues()
	leader := enq[len(enq)-1].pid
	killed := time.Now()
	require.NoError(t, syscall.Kill(leader, syscall.SIGKILL))
	victim := procs[slices.IndexFunc(procs, func(p *leaderProc) bool { return p.pid == leader })]
	testsupport.Recv(t, victim.done, 10*time.Second, "the killed leader exits")

	var next event
	testsupport.Eventually(t, 30*time.Second, "another process enqueues three times", func() bool {
		var after []event
		for _, e := range log.enqueues() {
			if e.pid != leader {
				after = append(after, e)
			}
		}
		if len(after) > 0 {
			next = after[0]
		}
		return len(after) >= 3
	})
	for _, p := range procs {
		if p != victim {
			p.stop(t)
		}
	}

	log.mu.Lock()
	assert.Empty(t, log.bad, "lines that are not events")
	log.mu.Unlock()
	events := log.all()
	checkOneAtATime(t, events)
	enq = log.enqueues()
	for i := 1; i < len(enq); i++ {
		// One leader at a time is checkOneAtATime's, from the terms; a gap
		// under half a tick between one process's enqueues is a tick the
		// loaded machine ran late, not a second leader.
		gap := enq[i].at.Sub(enq[i-1].at)
		if enq[i].pid != enq[i-1].pid {
			assert.GreaterOrEqual(t, gap, tick/2, "enqueue %d came %v after another process's: two leaders", i, gap)
		} else {
			assert.LessOrEqual(t, gap, tick+crashSlack, "enqueue %d came %v after the one before, under one leader", i, gap)
		}
	}
	term := lastTermBefore(events, next)
	takeover := term.at.Sub(killed)
	bound := crashWatchdog + crashWatchdog/3
	assert.LessOrEqual(t, takeover, bound+crashSlack, "the next term began %v after the kill (bound %v)", takeover, bound)
	assert.LessOrEqual(t, next.at.Sub(term.at), tick+crashSlack, "its first enqueue")

	inspector := asynq.NewInspectorFromRedisClient(srv.Client())
	q, err := inspector.GetQueueInfo("default")
	require.NoError(t, err)
	// The killed leader may have enqueued once more without reporting it.
	assert.GreaterOrEqual(t, q.Size, len(enq), "every reported enqueue is in Redis")
	assert.LessOrEqual(t, q.Size, len(enq)+1, "no enqueue went unreported but the killed leader's last")
	before := slices.IndexFunc(enq, func(e event) bool { return e.at.After(killed) })
	t.Logf("%d enqueues, %d in Redis; the kill came after %d of them; next term %v after the kill (bound %v + one renewal interval %v), first enqueue %v after that",
		len(enq), q.Size, before, takeover.Round(time.Millisecond), crashWatchdog, (crashWatchdog / 3).Round(time.Millisecond), next.at.Sub(term.at).Round(time.Millisecond))
}

// checkOneAtATime checks that every enqueue was made by the process whose
// term began last before it.
func checkOneAtATime(t *testing.T, events []event) {
	t.Helper()
	current := 0
	for _, e := range events {
		switch e.kind {
		case "TERM":
			current = e.pid
		case "ENQUEUE":
			assert.Equal(t, current, e.pid, "an enqueue at %v by %d while %d led", e.at.Format("15:04:05.000"), e.pid, current)
		}
	}
}

// lastTermBefore returns the last TERM event before e.
func lastTermBefore(events []event, e event) event {
	var term event
	for _, x := range events {
		if x.kind == "TERM" && !x.at.After(e.at) {
			term = x
		}
	}
	return term
}

// buildLeaderproc builds ./internal/leaderproc (without -race, for speed)
// into the test's temporary directory.
func buildLeaderproc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "leaderproc")
	gobin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err)
	out, err := exec.Command(gobin, "build", "-o", bin, "./internal/leaderproc").CombinedOutput()
	require.NoError(t, err, "go build ./internal/leaderproc:\n%s", out)
	return bin
}

// event is one line of a leaderproc's output.
type event struct {
	kind string // TERM or ENQUEUE
	pid  int
	at   time.Time
}

// eventLog collects the events of every process, as their lines arrive.
type eventLog struct {
	mu     sync.Mutex
	events []event
	bad    []string
}

func (l *eventLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := strings.Fields(line)
	if len(f) < 3 {
		l.bad = append(l.bad, line)
		return
	}
	pid, err1 := strconv.Atoi(f[1])
	ns, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		l.bad = append(l.bad, line)
		return
	}
	l.events = append(l.events, event{kind: f[0], pid: pid, at: time.Unix(0, ns)})
}

// all returns the events in time order.
func (l *eventLog) all() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := slices.Clone(l.events)
	slices.SortStableFunc(es, func(a, b event) int { return a.at.Compare(b.at) })
	return es
}

// enqueues returns the ENQUEUE events in time order.
func (l *eventLog) enqueues() []event {
	return slices.DeleteFunc(l.all(), func(e event) bool { return e.kind != "ENQUEUE" })
}

// lineWriter hands every complete line written to it to add.
type lineWriter struct {
	buf []byte
	add func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.add(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// leaderProc is one running leaderproc.
type leaderProc struct {
	cmd    *exec.Cmd
	pid    int
	stderr bytes.Buffer  // read after done
	done   chan struct{} // closed when reaped
	err    error         // cmd.Wait's
}

// startLeaderproc starts bin on addr; its lines go to log. At cleanup it is
// killed if it still runs, reaped, and its stderr logged if the test failed.
func startLeaderproc(t *testing.T, bin, addr string, log *eventLog) *leaderProc {
	t.Helper()
	p := &leaderProc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, "-addr", addr, "-watchdog", crashWatchdog.String())
	p.cmd.Stdout = &lineWriter{add: log.add}
	p.cmd.Stderr = &p.stderr
	// The kernel kills it if the test binary dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // after a failed assertion; harmless once reaped
		<-p.done
		if t.Failed() && p.stderr.Len() > 0 {
			t.Logf("leaderproc %d stderr:\n%s", p.pid, p.stderr.String())
		}
	})
	return p
}

// stop ends p with SIGTERM and checks that it exits cleanly (RunScheduler
// returns and the client closes).
func (p *leaderProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	testsupport.Recv(t, p.done, 15*time.Second, fmt.Sprintf("leaderproc %d exits after SIGTERM", p.pid))
	assert.NoError(t, p.err, "leaderproc %d exits cleanly: %s", p.pid, &p.stderr)
}
