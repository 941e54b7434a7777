package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
)

// Every instance of a fleet runs the same scheduler with a Locker on its own
// lockmw.Client; each run of a job executes on one of them.
func ExampleNewLocker() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	c := lockmw.New(rdb)
	defer c.Close()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(scheduler.NewLocker(c)))
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan struct{})
	_, err = s.NewJob(
		gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() {
			fmt.Println("the report ran, under the lock gocron:report")
			close(done)
		}),
		gocron.WithName("report"), // the lock is "gocron:" + the job's name
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Start()
	<-done
	_ = s.Shutdown()
	// Output: the report ran, under the lock gocron:report
}

// Lock tells a job that runs elsewhere (lockmw.ErrNotAcquired) from a Redis
// that fails (scheduler.ErrUnavailable); gocron skips the run either way and
// hands the error to the job's AfterLockError listener.
func ExampleLocker_Lock() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	a := lockmw.New(srv.NewClient())
	defer a.Close()
	b := lockmw.New(srv.NewClient())
	defer b.Close()
	onA, onB := scheduler.NewLocker(a), scheduler.NewLocker(b)

	lk, err := onA.Lock(ctx, "report")
	fmt.Println("a locks:", err)
	_, err = onB.Lock(ctx, "report")
	fmt.Println("b runs it elsewhere:", errors.Is(err, lockmw.ErrNotAcquired))
	_ = lk.Unlock(ctx) // kept for the minimum hold (500ms), then it expires

	_ = srv.Stop()
	_, err = onB.Lock(ctx, "cleanup")
	fmt.Println("b with Redis down:", errors.Is(err, scheduler.ErrUnavailable), errors.Is(err, lockmw.ErrNotAcquired))
	// Output:
	// a locks: <nil>
	// b runs it elsewhere: true
	// b with Redis down: true false
}

// With an Elector, the instance that leads runs all jobs. NewElector starts
// campaigning; IsLeader answers from memory. When the leader closes, the
// next standby leads at once.
func ExampleNewElector() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	a := lockmw.New(srv.NewClient())
	defer a.Close()
	b := lockmw.New(srv.NewClient())
	defer b.Close()
	// On each instance: gocron.NewScheduler(gocron.WithDistributedElector(e)).
	// gocron asks IsLeader before every run; here we ask until it says yes.
	leads := func(e *scheduler.Elector) bool {
		for range 500 {
			if e.IsLeader(ctx) == nil {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}

	ea := scheduler.NewElector(a, "leader")
	fmt.Println("a leads:", leads(ea))
	eb := scheduler.NewElector(b, "leader")
	defer eb.Close()
	err = eb.IsLeader(ctx)
	fmt.Println("b is a standby:", errors.Is(err, scheduler.ErrNotLeader))
	_ = ea.Close() // a stops, after its scheduler's Shutdown: b leads at once
	fmt.Println("b leads:", leads(eb))
	// Output:
	// a leads: true
	// b is a standby: true
	// b leads: true
}

// robfig/cron v3: each job gets its own wrapper, named, so that every
// instance's cron runs each tick of it once in all.
func ExampleCronOnce() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	l := scheduler.NewLocker(locks)
	done := make(chan struct{})
	ran := sync.OnceFunc(func() {
		fmt.Println("the report ran, under the lock gocron:report")
		close(done)
	})
	report := cron.FuncJob(ran)
	c := cron.New()
	_, err = c.AddJob("@every 1s", cron.NewChain(scheduler.CronOnce(l, "report")).Then(report))
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Start()
	<-done
	<-c.Stop().Done()
	// Output: the report ran, under the lock gocron:report
}
