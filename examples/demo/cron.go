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
// on one instance only. It fails unless every tick ran exactly once.
func cronSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	instances := []string{"instance-1", "instance-2"}
	p.note("%s and %s each run gocron with the job %q every %v; the job's lock is %q",
		instances[0], instances[1], "report", cronEvery, scheduler.DefaultKeyPrefix+"report")

	var (
		mu      sync.Mutex
		t0      time.Time            // the first tick
		ranBy   = map[int][]string{} // tick -> instances that ran it
		failure error
	)
	tickOf := func(now time.Time) int {
		return 1 + int(math.Round(float64(now.Sub(t0))/float64(cronEvery)))
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
	var bad []string
	for tick := 1; tick <= cronTicks; tick++ {
		if len(ranBy[tick]) != 1 {
			bad = append(bad, fmt.Sprintf("tick %d ran %d times", tick, len(ranBy[tick])))
		}
		for _, in := range ranBy[tick] {
			perInstance[in]++
		}
	}
	if len(ranBy) != cronTicks {
		bad = append(bad, fmt.Sprintf("runs in %d ticks, want %d", len(ranBy), cronTicks))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	p.summary("%d ticks, %d runs: each tick ran once (%s %d, %s %d)",
		cronTicks, cronTicks, instances[0], perInstance[instances[0]], instances[1], perInstance[instances[1]])
	return nil
}
