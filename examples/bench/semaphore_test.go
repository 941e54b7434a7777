package main

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

func TestSemaphoreScenario(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"semaphore"}
	cfg.locks = []string{"rlock", "poll"}
	cfg.workers, cfg.permits = 8, 3
	rep := runJSON(t, cfg) // fails the test when a hard target is missed

	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want the semaphore line, the uncontended line and poll skipped: %+v", len(rep.Results), rep.Results)
	}
	t.Run("the workers take permits and never hold more than there are", func(t *testing.T) {
		r := find(t, rep, "semaphore", "rlock")
		m := r.Metrics
		if m["acquisitions"] <= 0 || m["acquisitions_per_sec"] <= 0 {
			t.Fatalf("no acquisitions: %v", m)
		}
		if m["max_holders"] < 1 || m["max_holders"] > float64(cfg.permits) {
			t.Errorf("max holders = %v, want 1 to %d", m["max_holders"], cfg.permits)
		}
		if m["available_after"] != float64(cfg.permits) {
			t.Errorf("%v permits free after the run, want %d", m["available_after"], cfg.permits)
		}
		if u := m["utilization"]; u <= 0 || u > 1 {
			t.Errorf("utilization %v, want in (0, 1]", u)
		}
		if m["client_cmds_per_acq"] < 2 || m["wait_p99_us"] < m["wait_p50_us"] || m["ping_p50_us"] <= 0 {
			t.Errorf("figures: %v", m)
		}
		if m["handoffs"] > 0 && m["handoff_p99_us"] < m["handoff_p50_us"] {
			t.Errorf("hand-off p50 %v > p99 %v", m["handoff_p50_us"], m["handoff_p99_us"])
		}
		var names []string
		for _, tg := range r.Targets {
			names = append(names, tg.Name)
			if tg.Hard && !tg.Met {
				t.Errorf("hard target missed: %+v", tg)
			}
		}
		if want := []string{"max holders<=permits", "client cmds/acq<=4", "max/min per worker<=3", "permits back after"}; !slices.Equal(names, want) {
			t.Errorf("targets %q, want %q", names, want)
		}
	})
	t.Run("the uncontended line times the semaphore beside the mutex and the floor", func(t *testing.T) {
		m := find(t, rep, "semaphore-uncontended", "rlock").Metrics
		for _, k := range []string{"semaphore", "mutex", "floor"} {
			if m[k+"_p50_us"] <= 0 || m[k+"_p99_us"] < m[k+"_p50_us"] || m[k+"_client_cmds_per_op"] != 2 {
				t.Errorf("%s: %v", k, m)
			}
		}
		if m["semaphore_over_mutex_p50_median"] <= 0 {
			t.Errorf("ratio: %v", m)
		}
	})
	t.Run("the peers are one skipped line", func(t *testing.T) {
		if r := find(t, rep, "semaphore", "poll"); r.Skipped == "" {
			t.Errorf("not skipped: %+v", r)
		}
	})
}

func TestSemaphoreHandoffPairing(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name  string
		turns []turn
		want  []time.Duration
	}{
		{
			name: "a Lock return pairs with the latest other Unlock call within its wait",
			turns: []turn{
				{worker: 0, called: ms(0), acquired: ms(0), unlockCall: ms(5)},
				{worker: 1, called: ms(0), acquired: ms(1), unlockCall: ms(6)},
				{worker: 2, called: ms(2), acquired: ms(7), unlockCall: ms(9)},
			},
			want: []time.Duration{ms(1)}, // worker 2: from worker 1's Unlock at 6
		},
		{
			name: "an Unlock call before the wait began is no hand-off",
			turns: []turn{
				{worker: 0, called: ms(0), acquired: ms(0), unlockCall: ms(1)},
				{worker: 1, called: ms(2), acquired: ms(3), unlockCall: ms(4)},
			},
			want: nil,
		},
		{
			name: "the worker's own Unlock call does not count",
			turns: []turn{
				{worker: 0, called: ms(0), acquired: ms(0), unlockCall: ms(4)},
				{worker: 1, called: ms(0), acquired: ms(1), unlockCall: ms(2)},
				{worker: 1, called: ms(3), acquired: ms(5), unlockCall: ms(6)},
			},
			want: []time.Duration{ms(1)}, // worker 1's second turn: worker 0's Unlock at 4
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := semHandoffs(c.turns); !slices.Equal(got, c.want) {
				t.Errorf("hand-offs = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAMissedHardTargetFailsTheRun(t *testing.T) {
	t.Parallel()
	r := newResult("semaphore", "rlock")
	r.hardAtMost("max holders<=permits", 5, 4)
	r.atMost("soft", 9, 1)
	err := hardMisses([]*result{r})
	if !errors.Is(err, errHardMiss) {
		t.Fatalf("err = %v, want errHardMiss", err)
	}
	ok := newResult("semaphore", "rlock")
	ok.hardAtMost("max holders<=permits", 4, 4)
	ok.atMost("soft", 9, 1)
	if err := hardMisses([]*result{ok}); err != nil {
		t.Errorf("a soft miss failed the run: %v", err)
	}
}
