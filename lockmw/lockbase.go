package lockmw

import "sync/atomic"

// lockKind is what kind of lock a name is: a mutex, a semaphore, or a side
// of a read-write lock; or a multi-lock, which is no name of its own but is
// reported as a kind.
type lockKind uint8

const (
	kindMutex lockKind = iota
	kindSemaphore
	kindMultiLock
	kindRead  // an RWMutex's read side
	kindWrite // an RWMutex's write side
)

// String names the kind, as the hooks' events (LockInfo.Kind) and the logs
// do: both sides of a read-write lock are "rwmutex" (LockInfo.Mode tells
// them apart).
func (k lockKind) String() string {
	switch k {
	case kindSemaphore:
		return "semaphore"
	case kindMultiLock:
		return "multilock"
	case kindRead, kindWrite:
		return "rwmutex"
	}
	return "mutex"
}

// mode is a read-write lock side's LockInfo.Mode: "read", "write", or "".
func (k lockKind) mode() string {
	switch k {
	case kindRead:
		return "read"
	case kindWrite:
		return "write"
	}
	return ""
}

// lockBase is what every lock kind shares and what a hold needs of the
// lock it holds: the Client, the name, the kind, and the key the watchdog
// renews (a mutex's hash, a semaphore's sorted set of permits).
type lockBase struct {
	c        *Client
	name     string
	kind     lockKind
	k        keys
	renewKey string
	permits  int           // a semaphore's; 0 for a mutex (the hooks' events report it)
	group    string        // WithGroup's, per handle (the hooks' events report it)
	adapter  string        // WithAdapter's, per handle (the hooks' events report it)
	hot      *atomic.Int64 // the name's group in the Client's contention memory; nil: not kept
	// An RWMutex's side: suffix makes a hold's field its hash field
	// (":write" for the writer); the read side also re-enters the holds of
	// writer, its write side (a writer takes the read side).
	suffix string
	writer *lockBase
	// A quorum mutex that is a semaphore's permit or a read-write lock's
	// side on a quorum Client (quorumsem.go, quorumrw.go): the lock it is
	// of, which the hooks' events and Unlock name.
	of *lockBase
}

// reentrant reports whether a caller's own hold in its context is
// re-entered: a mutex's is, a permit is not.
func (b *lockBase) reentrant() bool { return b.kind != kindSemaphore }

// info is the lock as the hooks' events name it.
func (b *lockBase) info() LockInfo {
	if b.of != nil {
		return b.of.info()
	}
	return LockInfo{Name: b.name, Group: b.group, Kind: b.kind.String(), Permits: b.permits, Mode: b.kind.mode(), Adapter: b.adapter}
}

// base returns the lockBase of a lock of this package; every kind embeds
// it, so MultiLock finds who its members are (same, the order).
func (b *lockBase) base() *lockBase { return b }

// same reports whether b and o are one lock: the same Client, name and kind
// (the group is the handle's: it plays no part).
func (b *lockBase) same(o *lockBase) bool {
	return b.c == o.c && b.name == o.name && b.kind == o.kind
}
