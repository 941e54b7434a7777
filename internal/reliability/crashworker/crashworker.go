package crashworker

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
)

// Main runs the worker with args, the command line after the program's
// name (its mode first), on the clients dial builds, and returns the exit
// status: 0, 1 on an error, 2 on a usage error.
func Main(args []string, dial Dialer) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: worker crash|crash-sem|crash-multi|crash-rw|hold [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "crash", "crash-multi", "crash-rw":
		err = crash(args[1:], args[0], 0, dial)
	case "crash-sem":
		err = crash(args[1:], args[0], -1, dial)
	case "hold":
		err = hold(args[1:], dial)
	default:
		err = fmt.Errorf("unknown mode %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// crash runs the crash workload of mode: mutexes when permits is 0,
// semaphores (with a -permits flag) otherwise; multi-locks of two mutexes in
// mode crash-multi, read-write locks in mode crash-rw.
func crash(args []string, mode string, permits int, dial Dialer) error {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	addr := fs.String("addr", "", "redis-server address")
	logPath := fs.String("log", "", "log file (appended)")
	names := fs.String("names", "", "comma-separated lock names")
	goroutines := fs.Int("goroutines", 4, "contending goroutines")
	until := fs.Int64("until", 0, "stop at this time, Unix nanoseconds")
	watchdog := fs.Duration("watchdog", time.Second, "lockmw watchdog timeout")
	defaults := fs.Bool("default-options", false, "the client's default options (go-redis: ContextTimeoutEnabled off)")
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
			return reliability.WithHold(ctx, e.Field, e.Token, e.Waited, &unfenced)
		},
		// Every renewal attempt is logged, with when its script was sent
		// (lockmw's RenewalEvent.Sent, or the hooked send when earlier:
		// sends.RenewalSent), when its reply was in (lockmw has counted it
		// by the time this hook runs) and, unless it succeeded, what it
		// found.
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
				r.Begin = now // the reply was in
				lg.Write(r)
			}
		},
		// A hold lockmw ends as lost is logged when it ends it (this hook
		// runs on the goroutine that does: a loss timer's, the watchdog's),
		// before the hold's own goroutine notices (its Lost line).
		HoldEnd: func(ctx context.Context, e lockmw.HoldEndEvent) {
			if e.Kind == "multilock" || !errors.Is(e.Lost, lockmw.ErrLockLost) {
				return
			}
			lg.Write(reliability.Record{Kind: reliability.Dropped, Name: e.Name, Token: reliability.TokenOf(ctx), Time: time.Now(), Note: e.Lost.Error()})
		},
	}
	conns, c, err := connect(dial, *addr, DialOptions{DefaultOptions: *defaults, Sends: sends},
		lockmw.WithWatchdogTimeout(*watchdog), lockmw.WithHooks(hooks))
	if err != nil {
		return err
	}
	defer conns.close()
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

func hold(args []string, dial Dialer) error {
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
	conns, c, err := connect(dial, *addr, DialOptions{}, lockmw.WithWatchdogTimeout(*watchdog), lockmw.WithHooks(lockmw.Hooks{}))
	if err != nil {
		return err
	}
	defer conns.close()
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
			ok, err := reliability.GuardedWriteOn(wctx, conns[0].Backend, *resource, tok, fmt.Sprintf("pid %d", os.Getpid()))
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
