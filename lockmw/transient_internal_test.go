package lockmw

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// reply is a server's error reply, as a back-end returns one; go-redis's
// interface matches it too.
type reply = backend.Error

var _ redis.Error = reply("")

func TestTransientFailure(t *testing.T) {
	t.Parallel()
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	quorum := func(errs ...error) error { // quorumStore's "too few answered"
		return errors.Join(ErrNotAcquired, fmt.Errorf("lockmw: acquire %q: 1 of 3 masters answered, 2 needed: %w", "q", errors.Join(errs...)))
	}
	for _, tc := range []struct {
		what string
		err  error
		want bool
	}{
		{"a reset connection", fmt.Errorf("lockmw: acquire %q: %w", "x", reset), true},
		{"a connection closed mid-reply", io.ErrUnexpectedEOF, true},
		{"a read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"a refused dial", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"go-redis's pool timeout", redis.ErrPoolTimeout, true},
		{"a loading server", reply("LOADING Redis is loading the dataset in memory"), true},
		{"a fail-over's read-only replica", fmt.Errorf("lockmw: acquire %q: %w", "x", reply("READONLY You can't write against a read only replica.")), true},
		{"a master down", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"a slot migrating", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"a cluster down", reply("CLUSTERDOWN The cluster is down"), true},
		{"a busy script", reply("BUSY Redis is busy running a script."), true},
		{"too many clients", reply("ERR max number of clients reached"), true},
		{"a wrong type", fmt.Errorf("lockmw: acquire %q: %w", "x", reply("WRONGTYPE Operation against a key holding the wrong kind of value")), false},
		{"a script missing after the EVAL fallback", reply("NOSCRIPT No matching script."), false},
		{"no authentication", reply("NOAUTH Authentication required."), false},
		{"a wrong password", reply("WRONGPASS invalid username-password pair or user is disabled."), false},
		{"no permission", reply("NOPERM User u has no permissions to run the 'evalsha' command"), false},
		{"an unknown command", reply("ERR unknown command 'evalsha', with args beginning with: "), false},
		{"a script's error", reply("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{"a closed Client", fmt.Errorf("%w while waiting for %q", ErrClosed, "x"), false},
		{"a closed go-redis client", fmt.Errorf("lockmw: acquire %q: %w", "x", redis.ErrClosed), false},
		{"a bad name", fmt.Errorf("%w: empty", ErrInvalidName), false},
		{"a bad argument", fmt.Errorf("%w: negative wait", ErrInvalidArgument), false},
		{"a quorum: one master refuses, one is unreachable", quorum(reply("WRONGTYPE Operation"), reset), true},
		{"a quorum: every master that failed refuses", quorum(reply("WRONGTYPE Operation"), reply("NOPERM no")), false},
		{"a quorum: a closed go-redis client", quorum(redis.ErrClosed, reset), false},
	} {
		assert.Equal(t, tc.want, transientFailure(tc.err), tc.what)
	}
}

func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for d := time.Duration(0); len(got) < 9; {
		d = growBackoff(d)
		got = append(got, d)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got,
		"10ms doubling, at most 1s")
	for range 1000 {
		s := retrySleep(time.Second)
		assert.GreaterOrEqual(t, s, 500*ms)
		assert.LessOrEqual(t, s, time.Second)
	}
}
