package reliability_test

import (
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
)

// isRead reports whether h is a read hold of a read-write lock in a crash-rw
// run: the workers take the write side with fencing and the read side has
// no token (worker/rwmutex.go), so a hold with a fencing token is a write
// hold, and one named by a negative number of its own, or a phantom (never
// logged, so with no token), is a read hold. A write hold with no token is
// reported by assemble.
func isRead(h *hold) bool { return h.token <= 0 }

// checkRW proves over the records of a crash-rw run what check proves for
// mutexes, for read-write holds: no write hold overlaps any other hold of
// its name, read or write (read holds may overlap each other), a killed
// hold lasting until its keys could first have expired (hold.expiry: a
// reader's rwlock_timeout key and the lock's hash both got their TTL no
// earlier than its acquire or last renewal was sent); the write holds'
// fencing tokens increase; a name a killed writer held is acquired again
// within recoveryBound. The recovery after a killed reader is measured and
// logged, not judged: the next hold of its name may be a writer that also
// waits for the live readers' holds to end.
func checkRW(recs []reliability.Record, kills []kill, timeout time.Duration, end time.Time, obs observed) crashReport {
	return checkShared(recs, kills, timeout, end, obs, isRead)
}
