package lockmw

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// isTransient reports whether err is a server error that passes (a
// loading or read-only server, memory, a busy script, a cluster or
// fail-over state, too many clients).
func isTransient(err error) bool {
	for _, p := range []string{"LOADING", "READONLY", "OOM", "BUSY ", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF", "max number of clients"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// refusesRestore reports whether err says the server will never run our
// RESTORE.
func refusesRestore(err error) bool {
	for _, p := range []string{"NOPERM", "unknown command", "unknown or disabled command"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return refusesPayload(err)
}

// refusesPayload reports whether err is RESTORE's refusal of the payload
// itself: an RDB version newer than the server's, or data it cannot read.
func refusesPayload(err error) bool {
	return redis.HasErrorPrefix(err, "DUMP payload") || redis.HasErrorPrefix(err, "Bad data format")
}

// isServerError reports whether err is an error reply of the server (not a
// network or context error).
func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}
