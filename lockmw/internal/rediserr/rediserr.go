// Package rediserr classes the error replies of Redis that lockmw decides on:
// the transient ones, a refused RESTORE or payload, a server's error reply
// as opposed to a network or context error.
package rediserr

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// IsTransient reports whether err is a server error that passes (a
// loading or read-only server, memory, a busy script, a cluster or
// fail-over state, too many clients).
func IsTransient(err error) bool {
	for _, p := range []string{"LOADING", "READONLY", "OOM", "BUSY ", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF", "max number of clients"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// RefusesRestore reports whether err says the server will never run our
// RESTORE.
func RefusesRestore(err error) bool {
	for _, p := range []string{"NOPERM", "unknown command", "unknown or disabled command"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return RefusesPayload(err)
}

// RefusesPayload reports whether err is RESTORE's refusal of the payload
// itself: an RDB version newer than the server's, or data it cannot read.
func RefusesPayload(err error) bool {
	return redis.HasErrorPrefix(err, "DUMP payload") || redis.HasErrorPrefix(err, "Bad data format")
}

// IsServerError reports whether err is an error reply of the server (not a
// network or context error).
func IsServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}
