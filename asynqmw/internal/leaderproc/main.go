// Command leaderproc is the program TestRunSchedulerCrash (asynqmw) runs as
// separate OS processes, so that killing the leader (SIGKILL) hits a real
// process with its own lockmw.Client, watchdog and connections.
//
//	leaderproc -addr A [-name asynq:scheduler] [-watchdog 2s]
//
// runs asynqmw.RunScheduler on the lock name, with a lockmw.Client whose
// watchdog timeout is -watchdog, and a real asynq.Scheduler that enqueues the
// task "tick" "@every 1s". It writes one line to stdout per event, each with
// its pid and the time in Unix nanoseconds:
//
//	TERM <pid> <unixnano>              won a term (a scheduler is being built)
//	ENQUEUE <pid> <unixnano> <task-id> the scheduler enqueued the task
//
// It runs until SIGTERM or SIGINT, then stops leading (releasing the lock)
// and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "leaderproc:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "", "redis address")
	name := flag.String("name", "asynq:scheduler", "the leader lock")
	watchdog := flag.Duration("watchdog", 2*time.Second, "the lockmw watchdog timeout")
	flag.Parse()
	if *addr == "" {
		return errors.New("-addr is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: *addr}) // default options, as users have
	defer rdb.Close()
	c := lockmw.New(rdb, lockmw.WithWatchdogTimeout(*watchdog))
	defer c.Close()

	var out events
	newScheduler := func() *asynq.Scheduler {
		out.line("TERM")
		s := asynq.NewScheduler(asynq.RedisClientOpt{Addr: *addr}, &asynq.SchedulerOpts{
			PostEnqueueFunc: func(info *asynq.TaskInfo, err error) {
				if err == nil {
					out.line("ENQUEUE", info.ID)
				}
			},
			LogLevel: asynq.ErrorLevel,
		})
		if _, err := s.Register("@every 1s", asynq.NewTask("tick", nil)); err != nil {
			fmt.Fprintln(os.Stderr, "leaderproc: register:", err)
			return nil // ends the term: RunScheduler returns the error
		}
		return s
	}
	err := asynqmw.RunScheduler(ctx, c.Mutex(*name), newScheduler)
	if ctx.Err() != nil {
		return nil // stopped by a signal
	}
	return err
}

// events writes the event lines, one write each.
type events struct{ mu sync.Mutex }

func (e *events) line(kind string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintln(os.Stdout, append([]any{kind, os.Getpid(), time.Now().UnixNano()}, args...)...)
}
