package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Exit codes.
const (
	exitOK        = 0
	exitNotLocked = 1
	exitError     = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli is one invocation: the global flags and where output goes.
type cli struct {
	conn   connFlags
	json   bool
	ns     namespace // -namespace
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer
}

// command is one of rlock's commands: it parses its own arguments, connects
// and runs.
type command func(ctx context.Context, c *cli, args []string) error

// commands are rlock's commands by name.
var commands = map[string]command{
	"ls":     runLs,
	"show":   runShow,
	"watch":  runWatch,
	"unlock": runUnlock,
}

// run runs rlock with args and returns its exit code.
func run(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	redis.SetLogger(quietLogger{}) // go-redis' own logging would add lines to stderr
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := newFlagSet("rlock")
	c.conn.register(fs)
	fs.BoolVar(&c.json, "json", false, "print JSON Lines")
	fs.Var(&c.ns, "namespace", "the lockmw.WithNamespace prefix of the locks")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		return c.exit(usageError{err.Error()})
	}
	c.conn.visited(fs)
	if fs.NArg() == 0 {
		return c.exit(usageError{"no command given"})
	}
	cmd, ok := commands[fs.Arg(0)]
	if !ok {
		return c.exit(usageError{fmt.Sprintf("unknown command %q", fs.Arg(0))})
	}
	return c.exit(cmd(ctx, c, fs.Args()[1:]))
}

// exit prints err (one line) and returns its exit code.
func (c *cli) exit(err error) int {
	var nl notLockedError
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &nl):
		fmt.Fprintf(c.stderr, "rlock: %s\n", nl.Error())
		return exitNotLocked
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "rlock: %s (rlock -h for usage)\n", ue.msg)
		return exitError
	}
	fmt.Fprintf(c.stderr, "rlock: %s\n", oneLine(describe(err, c.conn.where())))
	return exitError
}

// newFlagSet returns a flag set that reports errors to its caller only.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseCommand parses a command's flags (the command may repeat -json and
// -namespace, which may come before or after its name) and
// checks that exactly one argument (NAME) or at most one (PATTERN) follows.
func (c *cli) parseCommand(fs *flag.FlagSet, args []string, minArgs int, what string) ([]string, error) {
	fs.BoolVar(&c.json, "json", c.json, "print JSON Lines")
	fs.Var(&c.ns, "namespace", "the lockmw.WithNamespace prefix of the locks")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, usageError{fs.Name() + " " + what}
		}
		return nil, usageError{fs.Name() + ": " + err.Error()}
	}
	if fs.NArg() < minArgs || fs.NArg() > 1 {
		return nil, usageError{"usage: rlock " + fs.Name() + " " + what}
	}
	return fs.Args(), nil
}

// usage is what rlock -h prints: the package documentation's usage.
const usage = `Usage:
  rlock [connection flags] [-json] ls [-limit N] [-count N] [PATTERN]
  rlock [connection flags] [-json] show NAME
  rlock [connection flags] [-json] watch [-interval D] NAME
  rlock [connection flags] unlock [-y] NAME

  ls      locks, read-write locks and semaphores whose name matches PATTERN (SCAN; every master of a cluster)
  show    holder(s), hold count, TTL, fencing token, metadata (trace id), the waiter queue;
          a read-write lock's mode, writer and readers
  watch   one line per change until interrupted: acquired, released, handed over, lost,
          waiter joined, waiter gave up
  unlock  force unlock of a lock; asks for confirmation unless -y (refuses without a terminal)

Connection flags:
  -addr host:port   server (default localhost:6379); with -cluster seed nodes, with
                    -sentinel the sentinels (comma-separated)
  -url URL          redis://... or rediss://... instead of -addr
  -cluster          the addresses are a Redis Cluster's
  -sentinel MASTER  ask the sentinels at -addr for MASTER
  -user NAME        ACL user
  -password P       password (default $REDIS_PASSWORD)
  -tls              connect with TLS
  -timeout D        bound on each request (default 10s)
  -namespace P      the locks of a lockmw Client made WithNamespace(P): names given and
                    shown as the application gives them, keys and channels under P
  REDIS_URL is read when no connection flag is given.

  -json             JSON Lines: one compact object per line
  -json and -namespace may also follow the command's name.

Exit status: 0 ok, 1 not locked (or unlock declined), 2 usage, connection, auth or server error.
`
