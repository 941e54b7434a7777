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

// parallelPlan is what one parallel scenario runs and judges.
type parallelPlan struct {
	scenario string
	kinds    []string    // the locks, taking turns in each round
	subject  string      // the lock the comparison judges
	targets  []parTarget // its targets against the others
}

// planParallel is the plan of scenario: parallel runs parallelKinds(locks)
// and judges rlock by parallelTargets; parallel-semaphore, whatever -lock
// says (no other lock has a semaphore), runs rlock's Mutex and its
// Semaphore and judges the Semaphore by semaphoreTargets.
func planParallel(scenario string, locks []string) parallelPlan {
	if scenario == parallelSemaphoreScenario {
		return parallelPlan{scenario: scenario, kinds: []string{"rlock", semaphoreKind}, subject: semaphoreKind, targets: semaphoreTargets}
	}
	return parallelPlan{scenario: scenario, kinds: parallelKinds(locks), subject: "rlock", targets: parallelTargets}
}

// parallelRuns is what every round of a parallel scenario measured, by lock,
// and the machine's load at the start of each round.
type parallelRuns struct {
	plan   parallelPlan
	byKind map[string][]*parRound
	loads  []string
	idle   float64 // the idle server's CPU time per second, before the first round
}

// runParallel is a parallel scenario: in each of cfg.parRounds rounds,
// every lock of plan runs once (runParRound), the first lock of a round
// being the next one of the previous round, so that the locks take turns
// on the same servers and machine. It returns one line per lock and the
// comparison of plan's subject with the others round by round (rlock with
// the floors and rueidislock; the Semaphore with the Mutex).
func runParallel(ctx context.Context, e *env, cfg config, plan parallelPlan) ([]*result, error) {
	rs := parallelRuns{plan: plan, byKind: map[string][]*parRound{}}
	n := len(plan.kinds)
	var err error
	if rs.idle, err = idleCPU(ctx, e, idleWindow); err != nil {
		return nil, err
	}
	for round := range cfg.parRounds {
		rs.loads = append(rs.loads, loadAvg())
		for i := range n {
			kind := plan.kinds[(round+i)%n]
			pr, err := runParRound(ctx, e, cfg, kind, rs.idle)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, kind, err)
			}
			rs.byKind[kind] = append(rs.byKind[kind], pr)
		}
	}
	var out []*result
	for _, kind := range plan.kinds {
		out = append(out, parallelResult(cfg, plan.scenario, kind, rs.byKind[kind]))
	}
	if c := compareParallel(rs); c != nil {
		out = append(out, c)
	}
	return out, nil
}
