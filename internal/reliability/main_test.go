package reliability_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// soak, when set, makes the crash scenarios (TestCrash*) run that long
// instead of their short defaults, on twice their names, drawing every
// fault kind: go test ./internal/reliability -run Crash -soak=5m -v.
var soak = flag.Duration("soak", 0, "run the crash scenarios this long (default: a short run)")

// faults makes the crash scenarios' fault proxies (netFaults) add latency
// each way and lose replies all along, and the scenarios draw every fault
// kind (faultSchedule), as -soak does. make soak sets it.
var faults = flag.Bool("faults", false, "crash scenarios: latency and lost replies all along through the fault proxies, and every fault kind drawn")

// seed, when not 0, replays the crash scenarios' schedule of faults: which
// fault comes when, and which process it strikes. It replays the schedule,
// not the interleaving of the processes, which no seed controls. 0: a seed
// is drawn, and printed by each scenario.
var seed = flag.Uint64("seed", 0, "replay the crash scenarios' schedule of faults drawn with this seed (0: draw one)")

// crashLogs, when set, is a directory the crash scenarios copy their
// processes' logs into (one subdirectory per test), to read after the run.
var crashLogs = flag.String("crashlogs", "", "copy the crash scenarios' logs into this directory")

// workerPath, when set, is a worker program built elsewhere that the crash
// scenarios and pause_test.go run instead of building ./worker: Main of
// internal/reliability/crashworker on another client (lockmw/rueidisrlock's
// and lockmw/valkeyrlock's internal/crashworker; their
// TestCrashMutualExclusion pass it).
var workerPath = flag.String("worker", "", "run this worker program instead of building ./worker (go-redis's)")

var worker struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if worker.dir != "" {
			_ = os.RemoveAll(worker.dir)
		}
		os.Exit(code)
	}))
}

// workerBinary builds ./worker once per test binary (without -race, for
// speed) and returns its path, or returns -worker's.
func workerBinary(t *testing.T) string {
	t.Helper()
	if *workerPath != "" {
		return *workerPath
	}
	worker.once.Do(func() {
		worker.dir, worker.err = os.MkdirTemp("", "reliability-worker-")
		if worker.err != nil {
			return
		}
		worker.path = filepath.Join(worker.dir, "worker")
		gobin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
		if err != nil {
			worker.err = err
			return
		}
		out, err := exec.Command(gobin, "build", "-o", worker.path, "./worker").CombinedOutput()
		if err != nil {
			worker.err = &buildError{err: err, out: string(out)}
		}
	})
	if worker.err != nil {
		t.Fatalf("building ./worker: %v", worker.err)
	}
	return worker.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }
