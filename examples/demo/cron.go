package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
)

const (
	cronEvery = time.Second
	cronTicks = 4
)

// cronSection runs two gocron schedulers, standing for two instances of a
// service, that share the job "report": with scheduler.Locker each tick runs
// on one instance only. It fails when a tick ran twice, or neither ran nor
// was skipped by every instance, or an attempt failed otherwise. A tick
// every instance skipped is reported, not a failure: on a loaded machine the
// previous tick's run may still hold the lock (busy), or the embedded Redis
// may not answer within the Locker's lock timeout (scheduler.ErrUnavailable,
// 500ms by default), which is the Locker's contract.
func cronSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	instances := []string{"instance-1", "instance-2"}
	p.note("%s and %s each run gocron with the job %q every %v; the job's lock is %q",
		instances[0], instances[1], "report", cronEvery, scheduler.DefaultKeyPrefix+"report")

	var (
		mu        sync.Mutex
		t0        time.Time                     // the first tick
		ranBy     = map[int][]string{}          // tick -> instances that ran it
		skippedBy = map[int]map[string]string{} // tick -> instance -> why it skipped it
		failure   error
	)
	// A tick's attempt belongs to the last tick before it, however late a
	// loaded machine made it, up to an interval (later, gocron itself moves
	// on to the next tick); and to a tick at most a tenth of an interval
	// ahead, as a loaded machine's attempt may come a little before its tick
	// by this clock.
	tickOf := func(now time.Time) int {
		return 1 + int(math.Floor(float64(now.Sub(t0)+cronEvery/10)/float64(cronEvery)))
	}
	skip := func(tick int, name, why string) {
		mu.Lock()
		defer mu.Unlock()
		if skippedBy[tick] == nil {
			skippedBy[tick] = map[string]string{}
		}
		skippedBy[tick][name] = why
	}

	var scheds []gocron.Scheduler
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		var errs []error
		for _, s := range scheds {
			errs = append(errs, s.Shutdown())
		}
		return errors.Join(errs...)
	}
	var clients []*lockmw.Client
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	defer func() { _ = stop() }() // on the error paths; runs before the Clients close

	// The first tick is a little ahead, so that both schedulers are ready
	// for it; from the same start their ticks line up.
	t0 = time.Now().Add(300 * time.Millisecond)
	for _, name := range instances {
		c := lockmw.New(rdb, withName(name))
		clients = append(clients, c)
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(scheduler.NewLocker(c)))
		if err != nil {
			return err
		}
		scheds = append(scheds, s)
		_, err = s.NewJob(
			gocron.DurationJob(cronEvery),
			gocron.NewTask(func() {
				mu.Lock()
				defer mu.Unlock()
				tick := tickOf(time.Now())
				ranBy[tick] = append(ranBy[tick], name)
				p.event("tick %d: report ran on %s", tick, name)
			}),
			gocron.WithName("report"),
			gocron.WithStartAt(gocron.WithStartDateTime(t0)),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
				tick := tickOf(time.Now())
				if busy, ok := errors.AsType[*lockmw.BusyError](err); ok {
					p.event("tick %d: %s skipped it: the lock is held by %s", tick, name, clientOf(busy.Holder))
					skip(tick, name, "busy")
					return
				}
				if errors.Is(err, scheduler.ErrUnavailable) {
					p.event("tick %d: %s skipped it: Redis did not answer within the lock timeout", tick, name)
					skip(tick, name, "Redis did not answer within the lock timeout")
					return
				}
				mu.Lock()
				defer mu.Unlock()
				failure = errors.Join(failure, fmt.Errorf("%s, tick %d: %w", name, tick, err))
			})),
		)
		if err != nil {
			return err
		}
		s.Start()
	}

	// Half a tick after the last one, stop: Shutdown waits for runs under way.
	select {
	case <-time.After(time.Until(t0.Add((cronTicks-1)*cronEvery + cronEvery/2))):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := stop(); err != nil {
		return err
	}

	mu.Lock()
	defer mu.Unlock()
	if failure != nil {
		return failure
	}
	perInstance := map[string]int{}
	var bad, skipped []string
	runs := 0
	for tick := 1; tick <= cronTicks; tick++ {
		switch n := len(ranBy[tick]); {
		case n > 1:
			bad = append(bad, fmt.Sprintf("tick %d ran %d times", tick, n))
		case n == 0 && len(skippedBy[tick]) < len(instances):
			bad = append(bad, fmt.Sprintf("tick %d neither ran nor was skipped by every instance", tick))
		case n == 0:
			skipped = append(skipped, fmt.Sprintf("tick %d (%s)", tick, whySkipped(skippedBy[tick], instances)))
		}
		for _, in := range ranBy[tick] {
			perInstance[in]++
			runs++
		}
	}
	for tick := range ranBy {
		if tick < 1 || tick > cronTicks {
			bad = append(bad, fmt.Sprintf("a run at tick %d, outside the %d ticks", tick, cronTicks))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	if len(skipped) > 0 {
		p.summary("%d ticks, %d runs: each tick ran at most once (%s %d, %s %d); every instance skipped %s",
			cronTicks, runs, instances[0], perInstance[instances[0]], instances[1], perInstance[instances[1]], strings.Join(skipped, ", "))
		return nil
	}
	p.summary("%d ticks, %d runs: each tick ran once (%s %d, %s %d)",
		cronTicks, runs, instances[0], perInstance[instances[0]], instances[1], perInstance[instances[1]])
	return nil
}

// whySkipped says why the instances skipped a tick, in their order.
func whySkipped(why map[string]string, instances []string) string {
	parts := make([]string, len(instances))
	for i, in := range instances {
		parts[i] = in + ": " + why[in]
	}
	return strings.Join(parts, "; ")
}
