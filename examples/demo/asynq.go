package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/lockmw"
)

const (
	asynqCopies = 4                      // of each invoice's task
	asynqWork   = 200 * time.Millisecond // sending an invoice
)

var asynqInvoices = []string{"1001", "1002"}

// ranKey is the context key of a flag the handler sets when it runs: an
// attempt that returns nil without running was skipped as a duplicate.
type ranKey struct{}

// asynqTally is what happened to the tasks' attempts, shared by the workers.
type asynqTally struct {
	mu        sync.Mutex
	sent      map[string]int // invoice -> times sent
	skipped   int
	busy      int
	processed int // attempts that returned nil: tasks done
	failure   error
	allDone   chan struct{} // closed when every task is done
}

// asynqSection runs two asynq servers, standing for two instances of a
// worker service, with asynqmw and a dedup window, and enqueues a burst of
// duplicate tasks: each invoice must be sent exactly once.
func asynqSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	tasks := asynqCopies * len(asynqInvoices)

	tally := &asynqTally{sent: map[string]int{}, allDone: make(chan struct{})}
	// The queue and the middleware's keys are this run's own: on a real
	// server an earlier run may have left tasks (when interrupted) or dedup
	// marks (within their window). Leave nothing behind.
	queue, prefix := "rlock-demo-"+runID, "rlock-demo-"+runID+":"
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	defer func() {
		var marks []string
		for _, inv := range asynqInvoices {
			marks = append(marks, prefix+"done:"+asynqmw.DefaultKey(ctx, invoiceTask(inv)))
		}
		_ = rdb.Del(context.WithoutCancel(ctx), marks...).Err()
		_ = inspector.DeleteQueue(queue, true)
	}()
	p.note("two asynq servers, worker-1 and worker-2, share the queue %q; their handlers are wrapped in", queue)
	p.note("asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute)) (real asynq servers: asynq runs on the embedded Redis too)")

	for _, name := range []string{"worker-1", "worker-2"} {
		stop, err := startAsynqWorker(rdb, name, queue, prefix, tasks, tally, p)
		if err != nil {
			return err
		}
		defer stop()
	}

	p.event("enqueueing %d tasks at once: %d copies each of invoice:send %s and %s", tasks, asynqCopies, asynqInvoices[0], asynqInvoices[1])
	client := asynq.NewClientFromRedisClient(rdb)
	for range asynqCopies {
		for _, inv := range asynqInvoices {
			if _, err := client.EnqueueContext(ctx, invoiceTask(inv), asynq.Queue(queue)); err != nil {
				return err
			}
		}
	}

	select {
	case <-tally.allDone:
	case <-ctx.Done():
		return fmt.Errorf("tasks not all done: %w", ctx.Err())
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if tally.failure != nil {
		return tally.failure
	}
	for _, inv := range asynqInvoices {
		if n := tally.sent[inv]; n != 1 {
			return fmt.Errorf("invoice %s sent %d times, want once", inv, n)
		}
	}
	p.summary("%d tasks, %d invoices sent once each, %d duplicates skipped, %d busy attempts put back in the queue",
		tasks, len(asynqInvoices), tally.skipped, tally.busy)
	return nil
}

func invoiceTask(invoice string) *asynq.Task {
	return asynq.NewTask("invoice:send", []byte(invoice))
}

// startAsynqWorker starts an asynq server with its own lockmw.Client, as one
// instance of the worker service would; stop shuts both down.
func startAsynqWorker(rdb redis.UniversalClient, name, queue, keyPrefix string, tasks int, tally *asynqTally, p *printer) (stop func(), err error) {
	locks := lockmw.New(rdb, withName(name))

	mux := asynq.NewServeMux()
	// Outside asynqmw: report what became of each attempt.
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			ran := new(bool)
			err := next.ProcessTask(context.WithValue(ctx, ranKey{}, ran), t)
			tally.mu.Lock()
			defer tally.mu.Unlock()
			switch {
			case asynqmw.IsBusy(err):
				tally.busy++
				holder := "another worker"
				if b, ok := errors.AsType[*lockmw.BusyError](err); ok {
					holder = clientOf(b.Holder)
				}
				p.event("%s: invoice %s is busy (locked by %s): back to the queue", name, t.Payload(), holder)
			case err != nil:
				tally.failure = errors.Join(tally.failure, fmt.Errorf("%s: invoice %s: %w", name, t.Payload(), err))
			default:
				if !*ran {
					tally.skipped++
					p.event("%s: invoice %s was already sent: duplicate skipped", name, t.Payload())
				}
				tally.processed++
				if tally.processed == tasks {
					close(tally.allDone)
				}
			}
			return err
		})
	})
	mux.Use(asynqmw.New(locks, asynqmw.WithDedupWindow(time.Minute), asynqmw.WithKeyPrefix(keyPrefix)))
	mux.HandleFunc("invoice:send", func(ctx context.Context, t *asynq.Task) error {
		if ran, ok := ctx.Value(ranKey{}).(*bool); ok {
			*ran = true
		}
		p.event("%s: sending invoice %s", name, t.Payload())
		select {
		case <-time.After(asynqWork):
		case <-ctx.Done(): // shut down, or the lock was lost
			return context.Cause(ctx)
		}
		tally.mu.Lock()
		tally.sent[string(t.Payload())]++
		tally.mu.Unlock()
		p.event("%s: invoice %s sent", name, t.Payload())
		return nil
	})

	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 4,
		Queues:      map[string]int{queue: 1},
		// A busy task goes back to the queue without using up its retries,
		// and is retried soon.
		IsFailure:      func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc: asynqmw.RetryDelay(time.Second, nil),
		// Poll often, for a quick demo.
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		ShutdownTimeout:          2 * time.Second,
		LogLevel:                 asynq.ErrorLevel,
	})
	if err := srv.Start(mux); err != nil {
		_ = locks.Close()
		return nil, err
	}
	return func() {
		srv.Shutdown()
		_ = locks.Close()
	}, nil
}
