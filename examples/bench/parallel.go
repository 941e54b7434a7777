package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// parallelAliases are the -lock names that run as another in the parallel
// scenario: without contention a lock never retries, so its retry variants
// are one lock.
var parallelAliases = map[string]string{"redsync-1ms": "redsync", "redislock-100ms": "redislock-1ms"}

// idleWindow is how long the parallel scenario times the idle server's CPU
// time before its first round.
const idleWindow = 2 * time.Second

// parallelKinds are the locks of the parallel scenario, in order: those of
// -lock (rlock followed by rlock-nobatch), a lock's retry variants once,
// then the two floors, SET NX PX + DEL
// on plain go-redis (setnx) and through its AutoPipeline(), which every
// run has.
func parallelKinds(locks []string) []string {
	var out []string
	for _, k := range append(slices.Clone(locks), "setnx", autopipelineKind) {
		if a, ok := parallelAliases[k]; ok {
			k = a
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
		if k == "rlock" && !slices.Contains(out, unbatchedKind) {
			out = append(out, unbatchedKind)
		}
	}
	return out
}

// parallelRuns is what every round of the parallel scenario measured, by lock,
// and the machine's load at the start of each round.
type parallelRuns struct {
	kinds  []string
	byKind map[string][]*parRound
	loads  []string
	idle   float64 // the idle server's CPU time per second, before the first round
}

// runParallel is the parallel scenario: in each of cfg.parRounds rounds,
// every lock runs once (runParRound), the first lock of a round being the
// next one of the previous round, so that the locks take turns on the same
// server and machine. It returns one line per lock and the comparison of
// rlock with the floors and rueidislock round by round.
func runParallel(ctx context.Context, e *env, cfg config) ([]*result, error) {
	rs := parallelRuns{kinds: parallelKinds(cfg.locks), byKind: map[string][]*parRound{}}
	n := len(rs.kinds)
	var err error
	if rs.idle, err = idleCPU(ctx, e, idleWindow); err != nil {
		return nil, err
	}
	for round := range cfg.parRounds {
		rs.loads = append(rs.loads, loadAvg())
		for i := range n {
			kind := rs.kinds[(round+i)%n]
			pr, err := runParRound(ctx, e, cfg, kind, rs.idle)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, kind, err)
			}
			rs.byKind[kind] = append(rs.byKind[kind], pr)
		}
	}
	var out []*result
	for _, kind := range rs.kinds {
		out = append(out, parallelResult(cfg, kind, rs.byKind[kind]))
	}
	if c := compareParallel(rs); c != nil {
		out = append(out, c)
	}
	return out, nil
}
