package backend

import (
	"errors"
	"strings"
)

// Error is a server's error reply, its message as the server sent it
// ("NOSCRIPT No matching script…"). A back-end returns every error reply
// as an Error (also inside an array reply), so that the engine classes it
// with the functions below whatever client produced it.
//
// It has go-redis's marker method (RedisError), so that an error lockmw
// returns still matches go-redis's redis.Error and redis.HasErrorPrefix as
// it did before the seam, whatever the back-end.
type Error string

func (e Error) Error() string { return string(e) }

// RedisError marks Error as a server's reply for go-redis's redis.Error
// interface.
func (Error) RedisError() {}

// ErrNil is the error of a nil reply (a missing key's GET).
var ErrNil = errors.New("backend: nil reply")

// ErrClosed is the error of a command sent on a closed client; a back-end
// returns it (or an error wrapping it) so that the engine stops retrying.
var ErrClosed = errors.New("backend: client closed")

// HasPrefix reports whether err is a server's error reply whose message
// starts with prefix, after a leading "ERR " (some servers add it to every
// error: KVRocks).
func HasPrefix(err error, prefix string) bool {
	var e Error
	return errors.As(err, &e) && strings.HasPrefix(strings.TrimPrefix(string(e), "ERR "), prefix)
}

// IsServerError reports whether err is a server's error reply, not a
// network, context or client error (nor a nil reply).
func IsServerError(err error) bool {
	var e Error
	return errors.As(err, &e)
}

// IsNoScript reports whether err is NOSCRIPT: the server does not have the
// script (a restart, SCRIPT FLUSH), and EVAL must send its source.
func IsNoScript(err error) bool { return HasPrefix(err, "NOSCRIPT") }

// IsBusyKey reports whether err is RESTORE's BUSYKEY: the key exists.
func IsBusyKey(err error) bool { return HasPrefix(err, "BUSYKEY") }

// IsWrongType reports whether err is WRONGTYPE: a key holds another type
// than the command needs.
func IsWrongType(err error) bool { return HasPrefix(err, "WRONGTYPE") }

// IsTransient reports whether err is a server's error reply that passes: a
// loading or read-only server, memory, a busy script, a cluster or
// fail-over state, too many clients.
func IsTransient(err error) bool {
	for _, p := range transient {
		if HasPrefix(err, p) {
			return true
		}
	}
	return false
}

var transient = []string{"LOADING", "READONLY", "OOM", "BUSY ", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF", "max number of clients"}
