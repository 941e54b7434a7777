package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// repoRoot is the root module's directory, from this package's: the
// repository this module is part of, whose replace directive names it.
const repoRoot = "../../../.."

// The crash suite's mutex scenario (the root module's
// TestCrashMutualExclusion: worker processes SIGKILLed while they hold and
// wait, their histories checked) runs with this worker: every worker's
// locks are on rueidis, the driver's on go-redis. It runs the scenario as
// go test runs it in the root module, with -race and its default length,
// and passes the worker with -worker. It is make stress's, not make
// test's (.ci/stress.sh sets RLOCK_STRESS=1): on a fresh machine it
// compiles the worker and its client without -race and links the scenario
// again, the longest part of this module's tests in a suite that must stay
// under 15 minutes (docs/reliability.md, "What runs where").
func TestCrashMutualExclusionOnRueidis(t *testing.T) {
	if os.Getenv("RLOCK_STRESS") == "" {
		t.Skip("runs in make stress (RLOCK_STRESS=1), not in make test")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "internal", "reliability", "crashworker")); err != nil {
		t.Skipf("the root module is not at %s (a downloaded module): %v", repoRoot, err)
	}
	gobin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "crashworker")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"test", "-race", "-count=1", "-v", "-run", "^TestCrashMutualExclusion$", "./internal/reliability", "-worker", bin}
	if dl, ok := t.Deadline(); ok {
		// The scenario's own timeout ends it, with its goroutines'
		// stacks, before this test's does.
		args = append(args, "-timeout", (time.Until(dl) * 9 / 10).Round(time.Second).String())
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = repoRoot
	out := &lineLogger{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	t.Logf("in %s: go %v", repoRoot, args)
	err = cmd.Run()
	out.flush()
	if err != nil {
		t.Fatalf("the crash scenario failed on rueidis workers: %v", err)
	}
}

// lineLogger writes what it is given to t.Log, a line at a time, as it
// comes: shown when the test fails or runs with -v.
type lineLogger struct {
	t    *testing.T
	mu   sync.Mutex // stdout and stderr are copied by a goroutine each
	part []byte     // a line not ended yet
}

var _ io.Writer = (*lineLogger)(nil)

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.t.Log(string(l.part[:i]))
		l.part = l.part[i+1:]
	}
}

// flush logs the last line, if it had no newline.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.t.Log(string(l.part))
		l.part = nil
	}
}
