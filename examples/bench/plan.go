package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// printPlan writes what a run of cfg would do, for -dry-run: the ground,
// the locks, each line of the report in order (a parallel scenario's locks
// as they take turns) and where the chart goes. It starts and dials
// nothing.
func printPlan(w io.Writer, cfg config) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# dry run: nothing started, nothing dialed\n# ground: %s\n# locks: %s\n", plannedGround(cfg), strings.Join(cfg.locks, ","))
	for i, j := range jobs(cfg) {
		switch {
		case j.skip != "": // a skipped line has no pair of workers to name
			fmt.Fprintf(&b, "%d. %s (%s): skipped, %s\n", i+1, j.scenario, j.lock, j.skip)
		case slices.Contains(parallelScenarios, j.scenario):
			p := planParallel(j.scenario, cfg.locks)
			fmt.Fprintf(&b, "%d. %s: %d rounds of %v, %d goroutines, each round %s, then %s compared\n",
				i+1, j, cfg.parRounds, cfg.duration, cfg.goroutines, strings.Join(p.kinds, ", "), p.subject)
		default:
			fmt.Fprintf(&b, "%d. %s\n", i+1, j)
		}
	}
	if cfg.svg != "" {
		fmt.Fprintf(&b, "# chart: %s\n", cfg.svg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plannedGround names the ground cfg asks for, as the header of a run
// names the ground it measured (describe), without its PING.
func plannedGround(cfg config) string {
	where := "loopback, a redis-server of its own"
	switch {
	case cfg.cluster > 0:
		where = fmt.Sprintf("a Redis Cluster of %d masters (no replicas) on loopback", cfg.cluster)
	case cfg.addr != "":
		where = "the Redis at " + cfg.addr
	}
	if cfg.latency > 0 {
		where += fmt.Sprintf(", through faultproxy, %v each way", cfg.latency)
	}
	return where
}
