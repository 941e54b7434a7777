package main

// The snippets of docs/leadership.md, compiled (examples without an Output
// comment are built, not run). Keep the two in step.

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
)

// What the snippets take as given; never set: the examples are not run.
var (
	rdb      redis.UniversalClient
	locks    *lockmw.Client
	redisOpt = asynq.RedisClientOpt{Addr: "localhost:6379"}
)

func billOverdueAccounts(context.Context)                        {}
func runBilling(context.Context, int64) error                    { return nil }
func snippet(ctx context.Context, f func(context.Context) error) { _ = f(ctx) }

func Example_lead() {
	snippet(context.Background(), func(ctx context.Context) error {
		err := lockmw.Lead(ctx, locks.Mutex("billing:leader"), func(lead context.Context) error {
			t := time.NewTicker(time.Minute)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					billOverdueAccounts(lead) // pass lead down: it ends with the term
				case <-lead.Done():
					return nil // the term is over: lost (Lead campaigns again) or ctx ended (Lead returns)
				}
			}
		})
		return err
	})
}

func Example_holder() {
	snippet(context.Background(), func(ctx context.Context) error {
		h, ok, err := locks.Mutex("billing:leader").Holder(ctx)
		switch {
		case err != nil:
			return err
		case !ok:
			fmt.Println("nobody leads")
		default:
			fmt.Printf("%s leads; its lock expires in %v unless renewed\n", h.Metadata, h.TTL)
		}
		return nil
	})
}

func Example_metadata() {
	host, _ := os.Hostname()
	locks := lockmw.New(rdb, lockmw.WithHooks(lockmw.Hooks{
		Metadata: func(context.Context, string) string { return host },
	}))
	_ = locks
}

func Example_fencing() {
	snippet(context.Background(), func(ctx context.Context) error {
		m := locks.Mutex("billing:leader", lockmw.WithFencing())
		err := lockmw.Lead(ctx, m, func(lead context.Context) error {
			token, _ := m.Token(lead)      // no round trip; larger than every earlier term's
			return runBilling(lead, token) // the ledger refuses writes with a token older than one it has seen
		})
		return err
	})
}

func Example_runScheduler() {
	snippet(context.Background(), func(ctx context.Context) error {
		err := asynqmw.RunScheduler(ctx, locks.Mutex("asynq:scheduler"), func() *asynq.Scheduler {
			s := asynq.NewScheduler(redisOpt, nil) // a new one each term: a stopped scheduler cannot start again
			if _, err := s.Register("@every 1m", asynq.NewTask("report:hourly", nil)); err != nil {
				log.Print(err) // a nil return would end the term with an error; here, the task is left out
			}
			return s
		})
		return err
	})
}

func Example_elector() {
	snippet(context.Background(), func(context.Context) error {
		e := scheduler.NewElector(locks, "leader")
		defer e.Close() // after s.Shutdown(): steps down, and another instance leads at once
		s, err := gocron.NewScheduler(gocron.WithDistributedElector(e))
		_ = s
		return err
	})
}
