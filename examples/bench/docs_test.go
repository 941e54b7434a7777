package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/docscheck"
)

// The ways the README and docs/*.md run the load tool, from the
// repository's root: its flags follow.
var benchCommands = [][]string{
	{"go", "run", "-C", "examples/bench", "."},
	{"go", "run", "./examples/bench"}, // when the tool was part of the root module (performance-history.md)
}

// Every load-tool command the README and docs/*.md quote still parses:
// its flags are the tool's, their values valid, and the plan a dry run
// prints (-dry-run) can be made; nothing is started or dialed.
func TestQuotedBenchCommandsParse(t *testing.T) {
	cmds, err := docscheck.Quoted("../..", "go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		i := slices.IndexFunc(benchCommands, func(p []string) bool {
			return len(c.Args) >= len(p) && slices.Equal(c.Args[:len(p)], p)
		})
		if i < 0 {
			continue
		}
		n++
		args := c.Args[len(benchCommands[i]):]
		var stderr strings.Builder
		cfg, _, err := parseFlags(args, &stderr)
		if err != nil {
			t.Errorf("%s: %v\n%s", c, err, stderr.String())
			continue
		}
		if err := printPlan(io.Discard, cfg); err != nil {
			t.Errorf("%s: -dry-run: %v", c, err)
		}
	}
	t.Logf("%d load-tool commands quoted", n)
	if n < 10 {
		t.Fatalf("found %d load-tool commands in the docs, want the performance page's at least", n)
	}
}

// -dry-run prints the ground, the locks and each line the run would
// print, in order, and runs nothing: it is parsed like any flag.
func TestDryRunPrintsThePlan(t *testing.T) {
	cfg, _, err := parseFlags([]string{"-dry-run", "-scenario", "parallel", "-cluster", "3", "-lock", "rlock,rueidislock", "-rounds", "2", "-svg", "c.svg"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.dryRun || cfg.svg != "c.svg" {
		t.Fatalf("dryRun %v, svg %q", cfg.dryRun, cfg.svg)
	}
	var b strings.Builder
	if err := printPlan(&b, cfg); err != nil {
		t.Fatal(err)
	}
	want := "# dry run: nothing started, nothing dialed\n" +
		"# ground: a Redis Cluster of 3 masters (no replicas) on loopback\n" +
		"# locks: rlock,rueidislock\n" +
		"1. parallel (rlock,rueidislock): 2 rounds of 3s, 64 goroutines, each round rlock, rlock-nobatch, rueidislock, setnx, setnx-autopipeline, then rlock compared\n" +
		"# chart: c.svg\n"
	if b.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", b.String(), want)
	}
}

// -svg charts the parallel scenarios' rounds: with no parallel scenario
// it is refused when the flags are parsed, not after a run.
func TestSVGWithoutAParallelScenarioIsRefused(t *testing.T) {
	_, _, err := parseFlags([]string{"-scenario", "contended", "-svg", "c.svg"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-svg") {
		t.Fatalf("got %v, want an error naming -svg", err)
	}
}
