// Command leader runs one instance of a service that does its periodic work
// only while it leads: it campaigns with lockmw.Lead on a lock name, prints
// "leading" when it wins a term and works every second until the term ends,
// and while another instance leads it stands by and says who leads
// (Mutex.Holder). Ctrl-C (SIGINT) or SIGTERM makes it step down: Lead
// releases the lock, a standby leads at once, and the program exits 0.
//
//	go run ./examples/leader
//
// Without REDIS_ADDR it runs against an embedded, in-process Redis (see
// examples/internal/devredis), alone: it leads at once. To watch a takeover,
// run three instances against one real Redis, each in a terminal of its own:
//
//	REDIS_ADDR=localhost:6379 go run ./examples/leader -watchdog 3s
//
// One prints "leading" and works; the other two print "standing by" and the
// leader's ID (its host name and pid, stored with the lock by a Metadata
// hook). Press Ctrl-C in the leader's terminal: it steps down and a standby
// leads at once. Or kill it with kill -9 <pid>, the pid on its first line:
// nothing is released, and a standby leads once the lock expires, within the
// watchdog timeout plus one renewal interval (3s + 1s here).
//
// Flags:
//
//	-name      the lock's name, the same on every instance (default examples:leader)
//	-watchdog  the watchdog timeout: the lock's TTL, renewed every third of it (default 5s)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-rlock/rlock/examples/internal/devredis"
)

func main() {
	cfg := config{work: time.Second}
	flag.StringVar(&cfg.name, "name", "examples:leader", "the lock's name, the same on every instance")
	flag.DurationVar(&cfg.watchdog, "watchdog", 5*time.Second, "the watchdog timeout: the lock's TTL, renewed every third of it")
	flag.Parse()
	if cfg.watchdog <= 0 {
		fmt.Fprintln(os.Stderr, "leader: -watchdog must be positive")
		os.Exit(2)
	}
	host, _ := os.Hostname()
	cfg.id = fmt.Sprintf("%s-%d", host, os.Getpid())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		stop()
		os.Exit(1)
	}
}

// start connects to the Redis devredis gives (embedded, or $REDIS_ADDR) and
// runs the instance until ctx ends.
func start(ctx context.Context, w io.Writer, cfg config) error {
	dial, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rdb, closeRedis, err := devredis.Client(dial)
	if err != nil {
		return err
	}
	defer closeRedis()
	where := "an embedded Redis (alone: set REDIS_ADDR=host:port to run several)"
	if !devredis.Embedded() {
		where = "the Redis at " + os.Getenv(devredis.EnvAddr)
	}
	out := &console{w: w}
	out.printf("%s (pid %d) campaigns for %q on %s, watchdog timeout %v", cfg.id, os.Getpid(), cfg.name, where, cfg.watchdog)
	return run(ctx, out, rdb, cfg)
}

// console prints timestamped lines; safe for concurrent use.
type console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// isCanceled reports whether err says that the run was asked to stop.
func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }
