package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"go.uber.org/goleak"
)

// The tests run the built rlock binary against real redis-servers: one
// single node and one 3-master cluster, shared by the tests (each uses names
// of its own).
var (
	bin     string
	single  *redistest.Server
	cluster *redistest.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// testMain builds the binary, starts the servers, runs the tests and checks
// for leaked goroutines.
func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rlock-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "rlock")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	if single, err = redistest.Launch(redistest.Config{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cluster, err = redistest.LaunchCluster(3, 0); err != nil {
		_ = single.Close()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	_ = cluster.Close()
	_ = single.Close()
	if code == 0 {
		// go-redis retries a failed dial in a goroutine that sleeps a second
		// before it sees its pool closed: not ours, and it ends by itself.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// result is what one run of the binary printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary with args, stdin from in (nil: /dev/null).
func run(t *testing.T, in io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "REDIS_URL=", "REDIS_PASSWORD=")
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running rlock %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// onSingle and onCluster are the connection flags of the shared servers.
func onSingle() []string { return []string{"-addr", single.Addr()} }

func onCluster() []string {
	var addrs []string
	for _, m := range cluster.Masters {
		addrs = append(addrs, m.Addr())
	}
	return []string{"-cluster", "-addr", strings.Join(addrs, ",")}
}

// topologies are the servers a test runs on.
var topologies = []struct {
	name  string
	flags func() []string
}{
	{"single node", onSingle},
	{"3-master cluster", onCluster},
}

// args joins connection flags and a command line.
func args(conn []string, rest ...string) []string {
	return append(append([]string{}, conn...), rest...)
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
