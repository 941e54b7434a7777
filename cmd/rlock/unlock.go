package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// unlockView is unlock's JSON object.
type unlockView struct {
	Name      string   `json:"name"`
	Unlocked  bool     `json:"unlocked"`
	WasHeldBy []string `json:"was_held_by"`
	Waiters   int      `json:"waiters"` // queued before: the first live one gets the lock
}

// runUnlock is "rlock unlock [-y] NAME": lockmw's ForceUnlock, after a
// confirmation.
func runUnlock(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("unlock")
	yes := fs.Bool("y", false, "do not ask for confirmation")
	rest, err := c.parseCommand(fs, args, 1, "[-y] NAME")
	if err != nil {
		return err
	}
	name := rest[0]
	if !*yes && !isTerminal(c.stdin) {
		return usageError{"unlock " + name + ": standard input is not a terminal; give -y to force unlock without asking"}
	}
	rdb, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, c.conn.timeout)
	defer cancel()
	s, err := readState(ctx, rdb, c.ns, name)
	switch {
	case err != nil:
		return err
	case s.kind == kindSemaphore:
		return usageError{"unlock " + name + ": a semaphore; force unlock is for locks"}
	case s.kind == kindRWLock:
		return usageError{"unlock " + name + ": a read-write lock (mode " + s.mode + "); force unlock is for locks: " +
			"lockmw has no force unlock for read-write locks, and deleting the hash would not hand it to rlock's queued waiters"}
	case s.kind == "":
		return notLockedError{name: name, why: s.why}
	}
	if !*yes && !confirm(c, s) {
		return notLockedError{name: name, why: "declined, left as it was"}
	}
	return forceUnlock(ctx, c, rdb, s)
}

// forceUnlock runs lockmw's ForceUnlock and reports it.
func forceUnlock(ctx context.Context, c *cli, rdb redis.UniversalClient, s *state) error {
	opts := []lockmw.Option{lockmw.WithLogger(slog.New(slog.DiscardHandler))}
	if c.ns != "" {
		opts = append(opts, lockmw.WithNamespace(string(c.ns)))
	}
	lc := lockmw.New(rdb, opts...)
	defer lc.Close()
	ok, err := lc.Mutex(s.name).ForceUnlock(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return notLockedError{name: s.name, why: "freed meanwhile"}
	}
	v := unlockView{Name: s.name, Unlocked: true, WasHeldBy: []string{}, Waiters: len(s.waiters)}
	for _, h := range s.holders {
		v.WasHeldBy = append(v.WasHeldBy, h.Field)
	}
	p := c.printer()
	if p.json {
		p.object(v)
	} else {
		p.textf("unlocked %s (was held by %s; %d waiter(s) queued)", s.name, strings.Join(v.WasHeldBy, ", "), v.Waiters)
	}
	return p.err
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// confirm asks on the terminal; true on "y" or "yes".
func confirm(c *cli, s *state) bool {
	var held []string
	for _, h := range s.holders {
		held = append(held, fmt.Sprintf("%s (count %d)", h.Field, h.Count))
	}
	fmt.Fprintf(c.stderr, "force unlock %s, held by %s, TTL %s, %d waiter(s)? [y/N] ",
		s.name, strings.Join(held, ", "), msDur(s.ttlMS), len(s.waiters))
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
