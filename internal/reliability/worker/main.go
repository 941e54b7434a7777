// Command worker is the program the reliability suite runs as separate OS
// processes, so that a crash (SIGKILL) or a freeze (SIGSTOP) hits a real
// process with its own lockmw.Client, watchdog and connections.
//
//	worker crash -addr A[,B,C] -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// runs goroutines that lock random names (on a quorum of masters when -addr
// names several: lockmw.NewQuorum; watchdog-renewed; every other
// goroutine with fencing, the others without, so that they take the
// uncontended RESTORE path), hold them for a random time and unlock, until
// the given moment, and appends every event to FILE as reliability.Records,
// naming a hold by its fencing token or, unfenced, by a negative number of
// its own: a Call line before Lock is called, a Start line after Lock
// returns, an End line before Unlock, a Renew line for every renewal
// attempt (saying what it found unless it succeeded) and a Lost line when a hold context is cancelled with
// lockmw.ErrLockLost. A process killed while holding leaves a Start line with
// no End; one killed while waiting, a Call line with no Start. A Pause line
// says the process did not run for a while (a ticker woke late). Its go-redis
// client has ContextTimeoutEnabled, unless -default-options keeps go-redis's
// defaults (as users configure; the subject of a run with lost replies).
//
//	worker crash-sem -addr A -log FILE -names a,b -permits 2 -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with a permit of the semaphore of each name (permits
// permits, watchdog-renewed); a permit has no fencing token, so every hold is
// named by a negative number of its own.
//
//	worker crash-multi -addr A -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with a lockmw.MultiLock of two fenced mutexes of random
// names, given in a random order: a Call, Start and End line for each member,
// named by its fencing token (multilock.go).
//
//	worker crash-rw -addr A -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with the fenced lockmw.RWMutex of each name, its read side
// four times in five and its write side otherwise (rwmutex.go): a write hold
// is named by its fencing token, a read hold by a negative number.
//
//	worker hold -addr A -name N -resource KEY [-watchdog 1s]
//
// takes one lock and talks on stdin/stdout, one line each way: it prints
// "HELD <token>", then "LOST <is-ErrLockLost> <cause>" as soon as the hold
// context ends; it answers "write" with "WRITE accepted|rejected|error ..."
// (a reliability.GuardedWrite with its token, made without looking at the
// hold context, as a goroutine already past its check would) and "unlock"
// with "UNLOCK <is-ErrLockLost> <error>"; it exits at the end of stdin.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: worker crash|crash-sem|crash-multi|crash-rw|hold [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "crash", "crash-multi", "crash-rw":
		err = crash(os.Args[2:], os.Args[1], 0)
	case "crash-sem":
		err = crash(os.Args[2:], os.Args[1], -1)
	case "hold":
		err = hold(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// newClient returns a go-redis client of addr, with ContextTimeoutEnabled
// unless defaults says to keep go-redis's default options, and a lockmw
// client on it. A comma-separated addr names the masters of a quorum
// (lockmw.NewQuorum); the go-redis client returned is the first's, and the
// others live as long as the process.
func newClient(addr string, watchdog time.Duration, hooks lockmw.Hooks, defaults bool, sends *reliability.ScriptSends) (*redis.Client, *lockmw.Client) {
	var rdbs []redis.UniversalClient
	for i, a := range strings.Split(addr, ",") {
		rdb := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: !defaults})
		rdb.AddHook(reliability.SendHook{Client: i})
		if sends != nil {
			rdb.AddHook(sends.Hook())
		}
		rdbs = append(rdbs, rdb)
	}
	opts := []lockmw.Option{lockmw.WithWatchdogTimeout(watchdog), lockmw.WithHooks(hooks)}
	if len(rdbs) > 1 {
		return rdbs[0].(*redis.Client), lockmw.NewQuorum(rdbs, opts...)
	}
	return rdbs[0].(*redis.Client), lockmw.New(rdbs[0], opts...)
}

// crash runs the crash workload of mode: mutexes when permits is 0,
// semaphores (with a -permits flag) otherwise; multi-locks of two mutexes in
// mode crash-multi, read-write locks in mode crash-rw.
func crash(args []string, mode string, permits int) error {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	addr := fs.String("addr", "", "redis-server address")
	logPath := fs.String("log", "", "log file (appended)")
	names := fs.String("names", "", "comma-separated lock names")
	goroutines := fs.Int("goroutines", 4, "contending goroutines")
	until := fs.Int64("until", 0, "stop at this time, Unix nanoseconds")
	watchdog := fs.Duration("watchdog", time.Second, "lockmw watchdog timeout")
	defaults := fs.Bool("default-options", false, "go-redis's default options (ContextTimeoutEnabled off)")
	if permits != 0 {
		fs.IntVar(&permits, "permits", 2, "permits of each semaphore")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *logPath == "" || *names == "" || *until == 0 {
		return fmt.Errorf("%s: -addr, -log, -names and -until are required", mode)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	lg := reliability.NewLog(f, os.Getpid())

	// A hold is named in the log by its fencing token; a hold of an unfenced
	// mutex or a permit gets a negative number of its own, unique in this
	// process.
	var unfenced atomic.Int64
	var members memberHolds
	sends := new(reliability.ScriptSends)
	hooks := lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			if e.Kind == "multilock" { // its members are logged, each as a hold
				return ctx
			}
			if mode == "crash-multi" {
				members.note(ctx, e)
			}
			tok := e.Token
			if tok == 0 {
				tok = -unfenced.Add(1)
			}
			if e.Waited {
				ctx = reliability.WithWaited(ctx)
			}
			return reliability.WithToken(reliability.WithField(ctx, e.Field), tok)
		},
		// Every renewal attempt is logged, with when its script was sent
		// (lockmw's RenewalEvent.Sent, or the hooked send when earlier:
		// sends.RenewalSent) and, unless it succeeded, what it found.
		Renewal: func(e lockmw.RenewalEvent) {
			now := time.Now()
			estimate := e.Sent
			for _, l := range e.Locks {
				arg := reliability.FieldOf(l.Context)
				if l.Mode == "write" {
					arg += ":write" // Redisson's writer field, which the renewal names
				}
				r := reliability.Record{Kind: reliability.Renew, Name: l.Name, Token: reliability.TokenOf(l.Context),
					Time: sends.RenewalSent(estimate, arg), Note: renewNote(l.Outcome)}
				if r.Note != "" {
					r.Begin = now // the reply was in
				}
				lg.Write(r)
			}
		},
	}
	rdb, c := newClient(*addr, *watchdog, hooks, *defaults, sends)
	defer rdb.Close()
	defer c.Close()
	lg.Write(reliability.Record{Kind: reliability.Hello, Time: time.Now(), Note: c.ID()})

	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, *until))
	defer cancel()
	list := strings.Split(*names, ",")
	var wg sync.WaitGroup
	wg.Go(func() { watchPauses(ctx, lg) })
	for i := range *goroutines {
		if mode == "crash-multi" {
			wg.Go(func() { contendMulti(ctx, c, list, lg, &members) })
			continue
		}
		locker := func(name string) lockmw.Locker { return c.Semaphore(name, permits) }
		switch {
		case mode == "crash-rw":
			locker = rwLocker(c)
		case permits == 0:
			// Every other goroutine locks without fencing: those take the
			// uncontended fast path (RESTORE) when they find a name free.
			var opts []lockmw.LockOption
			if i%2 == 0 {
				opts = append(opts, lockmw.WithFencing())
			}
			locker = func(name string) lockmw.Locker { return c.Mutex(name, opts...) }
		}
		wg.Go(func() { contend(ctx, locker, list, lg) })
	}
	wg.Wait()
	return lg.Err()
}

// Pauses of the process longer than pauseAfter are logged; pauseTick is
// how often the watch looks.
const (
	pauseTick  = 5 * time.Millisecond
	pauseAfter = 50 * time.Millisecond
)

// watchPauses logs a Pause record whenever its ticker wakes more than
// pauseAfter after the last time, until ctx ends: the process (its
// renewals, its loss timers) did not run in between.
func watchPauses(ctx context.Context, lg *reliability.Log) {
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(last) > pauseAfter {
			lg.Write(reliability.Record{Kind: reliability.Pause, Begin: last, Time: now})
		}
		last = now
	}
}

// holdTime is how long a critical section lasts: mostly short, sometimes
// long enough for the watchdog to renew the lock a few times.
func holdTime() time.Duration {
	if rand.IntN(100) < 8 {
		return 350*time.Millisecond + rand.N(750*time.Millisecond)
	}
	return time.Millisecond + rand.N(20*time.Millisecond)
}

// contend locks a random name with the Locker locker gives for it, holds it
// and unlocks, logging every step, until ctx ends.
func contend(ctx context.Context, locker func(name string) lockmw.Locker, names []string, lg *reliability.Log) {
	for ctx.Err() == nil {
		name := names[rand.IntN(len(names))]
		m := locker(name)
		lctx, sent := reliability.WithSendTimes(ctx)
		begin := time.Now()
		lg.Write(reliability.Record{Kind: reliability.Call, Name: name, Time: begin})
		hctx, err := m.Lock(lctx)
		if err != nil {
			// The run's deadline ends a wait: not a failure. go-redis
			// (ContextTimeoutEnabled) may fail a read at the deadline a
			// moment before ctx's timer reports it, and lockmw says so.
			if !runOver(ctx) {
				lg.Write(reliability.Record{Kind: reliability.Fail, Name: name, Time: time.Now(), Note: "lock: " + err.Error()})
				time.Sleep(10 * time.Millisecond) // back off after a Redis error
			}
			continue
		}
		tok := reliability.TokenOf(hctx) // as HoldStart named the hold
		note := reliability.StartNote(reliability.FieldOf(hctx), reliability.Waited(hctx))
		lg.Write(reliability.Record{Kind: reliability.Start, Name: name, Token: tok, Time: time.Now(), Begin: begin, Sent: sent.Last(), Note: note})

		t := time.NewTimer(holdTime())
		select {
		case <-t.C:
		case <-hctx.Done(): // lost, or ctx ended: the run is over
		}
		t.Stop()
		if !lost(hctx) {
			lg.Write(reliability.Record{Kind: reliability.End, Name: name, Token: tok, Time: time.Now()})
		}
		// A loss noticed now may have come before the End line was
		// written: record it too, so the checker leaves the hold out.
		if lost(hctx) {
			lg.Write(reliability.Record{Kind: reliability.Lost, Name: name, Token: tok, Time: time.Now(), Note: context.Cause(hctx).Error()})
			if err := m.Unlock(hctx); !errors.Is(err, lockmw.ErrLockLost) {
				lg.Write(reliability.Record{Kind: reliability.Fail, Name: name, Token: tok, Time: time.Now(), Note: fmt.Sprintf("%s%v, want ErrLockLost", reliability.UnlockAfterLossNote, err)})
			}
			continue
		}
		if err := m.Unlock(hctx); err != nil {
			lg.Write(reliability.Record{Kind: reliability.Fail, Name: name, Token: tok, Time: time.Now(), Note: reliability.UnlockFailedNote + err.Error()})
		}
	}
}

// renewNote is the Note of a Renew record of a renewal with outcome o.
func renewNote(o lockmw.RenewalOutcome) string {
	switch o {
	case lockmw.RenewalOK:
		return ""
	case lockmw.RenewalLost:
		return reliability.RenewLostNote
	}
	return reliability.RenewFailedNote
}

func lost(hctx context.Context) bool {
	return errors.Is(context.Cause(hctx), lockmw.ErrLockLost)
}

func hold(args []string) error {
	fs := flag.NewFlagSet("hold", flag.ContinueOnError)
	addr := fs.String("addr", "", "redis-server address")
	name := fs.String("name", "", "lock name")
	resource := fs.String("resource", "", "key of the guarded resource")
	watchdog := fs.Duration("watchdog", time.Second, "lockmw watchdog timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *name == "" || *resource == "" {
		return errors.New("hold: -addr, -name and -resource are required")
	}
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	rdb, c := newClient(*addr, *watchdog, lockmw.Hooks{}, false, nil)
	defer rdb.Close()
	defer c.Close()
	ctx := context.Background()
	m := c.Mutex(*name, lockmw.WithFencing())
	hctx, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	tok, _ := m.Token(hctx)
	say("HELD %d", tok)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-hctx.Done()
		cause := context.Cause(hctx)
		say("LOST %t %q", errors.Is(cause, lockmw.ErrLockLost), cause.Error())
	}()

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "write":
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ok, err := reliability.GuardedWrite(wctx, rdb, *resource, tok, fmt.Sprintf("pid %d", os.Getpid()))
			cancel()
			switch {
			case err != nil:
				say("WRITE error %q", err.Error())
			case ok:
				say("WRITE accepted")
			default:
				say("WRITE rejected")
			}
		case "unlock":
			err := m.Unlock(hctx)
			say("UNLOCK %t %q", errors.Is(err, lockmw.ErrLockLost), fmt.Sprint(err))
		}
	}
	c.Close()
	<-done
	return in.Err()
}

// runOver reports whether ctx, the run's context, ended or its deadline
// passed (its timer may not have fired yet on a loaded machine).
func runOver(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || (ok && !time.Now().Before(dl))
}
