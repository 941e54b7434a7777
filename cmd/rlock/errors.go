package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// notLockedError is exit code 1: the name holds no lock or semaphore.
type notLockedError struct {
	name string
	why  string // what the key is instead, when it exists
}

// Error says "<name>: not locked".
func (e notLockedError) Error() string {
	if e.why != "" {
		return fmt.Sprintf("%s: not locked (%s)", e.name, e.why)
	}
	return e.name + ": not locked"
}

// usageError is a bad command line (exit code 2).
type usageError struct{ msg string }

// Error returns the message.
func (e usageError) Error() string { return e.msg }

// describe turns a failure into one line an operator can act on: could not
// connect, refused credentials, a server without a needed command.
func describe(err error, where string) string {
	msg := err.Error()
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer from %s in time: %s", where, msg)
	case redis.HasErrorPrefix(err, "WRONGPASS"), redis.HasErrorPrefix(err, "NOAUTH"),
		strings.Contains(msg, "invalid password"), strings.Contains(msg, "invalid username-password"):
		return fmt.Sprintf("authentication refused by %s: %s", where, msg)
	case redis.HasErrorPrefix(err, "NOPERM"):
		return fmt.Sprintf("permission denied by %s: %s", where, msg)
	case strings.Contains(msg, "unknown command"), strings.Contains(msg, "unknown subcommand"):
		return fmt.Sprintf("the server at %s lacks a command rlock needs: %s", where, msg)
	case errors.As(err, &oe):
		return fmt.Sprintf("cannot connect to %s: %s", where, msg)
	}
	return msg
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// redactURL hides the password of a redis:// URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// quietLogger drops go-redis' own log lines: rlock reports errors itself, on
// one line.
type quietLogger struct{}

// Printf does nothing.
func (quietLogger) Printf(context.Context, string, ...any) {}
