// Package rediserr classes the error replies of Redis that lockmw decides on
// beyond the seam's own classes (backend.IsTransient, IsNoScript…): a
// refused RESTORE or payload.
package rediserr

import "github.com/go-rlock/rlock/lockmw/backend"

// IsTransient reports whether err is a server error that passes
// (backend.IsTransient).
func IsTransient(err error) bool { return backend.IsTransient(err) }

// RefusesRestore reports whether err says the server will never run our
// RESTORE.
func RefusesRestore(err error) bool {
	for _, p := range []string{"NOPERM", "unknown command", "unknown or disabled command"} {
		if backend.HasPrefix(err, p) {
			return true
		}
	}
	return RefusesPayload(err)
}

// RefusesPayload reports whether err is RESTORE's refusal of the payload
// itself: an RDB version newer than the server's, or data it cannot read.
func RefusesPayload(err error) bool {
	return backend.HasPrefix(err, "DUMP payload") || backend.HasPrefix(err, "Bad data format")
}

// IsServerError reports whether err is an error reply of the server (not a
// network or context error).
func IsServerError(err error) bool { return backend.IsServerError(err) }
