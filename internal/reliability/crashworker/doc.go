// Package crashworker is the worker program the reliability suite runs as
// separate OS processes, so that a crash (SIGKILL) or a freeze (SIGSTOP)
// hits a real process with its own lockmw.Client, watchdog and connections;
// for any Redis client: Main runs it on the clients a Dialer builds. The
// command internal/reliability/worker is Main on go-redis;
// lockmw/rueidisrlock/internal/crashworker and
// lockmw/valkeyrlock/internal/crashworker are Main on rueidis and
// valkey-go, which the suite runs with -worker (each module's
// TestCrashMutualExclusion does).
//
//	worker crash -addr A[,B,C] -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// runs goroutines that lock random names (on a quorum of masters when -addr
// names several: lockmw.NewQuorumOf; watchdog-renewed; every other
// goroutine with fencing, the others without, so that they take the
// uncontended RESTORE path), hold them for a random time and unlock, until
// the given moment, and appends every event to FILE as reliability.Records,
// naming a hold by its fencing token or, unfenced, by a negative number of
// its own: a Call line before Lock is called, a Start line after Lock
// returns, an End line before Unlock, a Renew line for every renewal
// attempt (when it was sent and its reply in; what it found unless it
// succeeded), a Dropped line when lockmw ends a hold as lost (its HoldEnd
// hook) and a Lost line when the hold's goroutine sees its context
// cancelled with lockmw.ErrLockLost. A process killed while holding leaves a Start line with
// no End; one killed while waiting, a Call line with no Start. A Pause line
// says the process did not run for a while (a ticker woke late). Its
// clients are the Dialer's; -default-options asks for the client's defaults
// (as users configure; the subject of a run with lost replies): go-redis's
// has ContextTimeoutEnabled otherwise.
//
//	worker crash-sem -addr A -log FILE -names a,b -permits 2 -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with a permit of the semaphore of each name (permits
// permits, watchdog-renewed); a permit has no fencing token, so every hold is
// named by a negative number of its own.
//
//	worker crash-multi -addr A -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with a lockmw.MultiLock of two fenced mutexes of random
// names, given in a random order: a Call, Start and End line for each member,
// named by its fencing token (multilock.go).
//
//	worker crash-rw -addr A -log FILE -names a,b,c -goroutines 4 -until UNIXNANO [-watchdog 1s] [-default-options]
//
// does the same with the fenced lockmw.RWMutex of each name, its read side
// four times in five and its write side otherwise (rwmutex.go): a write hold
// is named by its fencing token, a read hold by a negative number.
//
//	worker hold -addr A -name N -resource KEY [-watchdog 1s]
//
// takes one lock and talks on stdin/stdout, one line each way: it prints
// "HELD <token>", then "LOST <is-ErrLockLost> <cause>" as soon as the hold
// context ends; it answers "write" with "WRITE accepted|rejected|error ..."
// (a reliability.GuardedWriteOn with its token, made without looking at the
// hold context, as a goroutine already past its check would) and "unlock"
// with "UNLOCK <is-ErrLockLost> <error>"; it exits at the end of stdin.
package crashworker
