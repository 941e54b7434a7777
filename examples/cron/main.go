// Command cron shows two gocron schedulers, standing for two instances of a
// service, that share a job running every second: with the scheduler
// package's Locker each tick runs on one instance only, and the output says
// which. Run it with
//
//	go run ./examples/cron
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set REDIS_ADDR=host:port
// to use a real server. It runs for about 5 seconds and exits 0.
//
// Each instance has its own lockmw.Client, as separate processes would. The
// job starts on a whole second on both, so their ticks come together and
// race for the lock gocron:report; the loser skips the tick (gocron calls
// AfterLockError with an error matching lockmw.ErrNotAcquired). The lock is
// kept for the minimum hold (500ms by default) after the run, so an instance
// whose tick comes a few milliseconds late cannot run the tick again.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
	"github.com/google/uuid"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cron:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	where := "embedded Redis"
	if !devredis.Embedded() {
		where = "Redis at " + os.Getenv(devredis.EnvAddr)
	}
	fmt.Printf("two instances, one job every second, on %s\n", where)

	start := time.Now().Truncate(time.Second).Add(time.Second)
	var mu sync.Mutex
	runs := map[string]int{}
	var failure error
	var schedulers []gocron.Scheduler
	for _, name := range []string{"instance-1", "instance-2"} {
		c := lockmw.New(rdb)
		defer c.Close()
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(scheduler.NewLocker(c)))
		if err != nil {
			return err
		}
		schedulers = append(schedulers, s)
		_, err = s.NewJob(
			gocron.DurationJob(time.Second),
			gocron.NewTask(func() {
				mu.Lock()
				defer mu.Unlock()
				runs[name]++
				fmt.Printf("%s  report ran on %s\n", time.Now().Format("15:04:05.000"), name)
			}),
			gocron.WithName("report"),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
				if errors.Is(err, lockmw.ErrNotAcquired) {
					fmt.Printf("%s  %s skipped: the other instance has it\n", time.Now().Format("15:04:05.000"), name)
					return
				}
				mu.Lock()
				failure = errors.Join(failure, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
			})),
		)
		if err != nil {
			return err
		}
		s.Start()
	}

	time.Sleep(time.Until(start.Add(4*time.Second + 500*time.Millisecond))) // five ticks
	for _, s := range schedulers {
		if err := s.Shutdown(); err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range runs {
		total += n
	}
	fmt.Printf("%d runs in 5 ticks: %v\n", total, runs)
	if failure != nil {
		return failure
	}
	if total != 5 {
		return fmt.Errorf("%d runs in 5 ticks, want 5", total)
	}
	return nil
}
