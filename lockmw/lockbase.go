package lockmw

import "sync/atomic"

// lockKind is what kind of lock a name is: a mutex or a semaphore; or a
// multi-lock, which is no name of its own but is reported as a kind.
type lockKind uint8

const (
	kindMutex lockKind = iota
	kindSemaphore
	kindMultiLock
)

// String names the kind, as the hooks' events (LockInfo.Kind) and the logs
// do.
func (k lockKind) String() string {
	switch k {
	case kindSemaphore:
		return "semaphore"
	case kindMultiLock:
		return "multilock"
	}
	return "mutex"
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
	hot      *atomic.Int64 // the name's group in the Client's contention memory; nil: not kept
}

// reentrant reports whether a caller's own hold in its context is
// re-entered: a mutex's is, a permit is not.
func (b *lockBase) reentrant() bool { return b.kind != kindSemaphore }

// info is the lock as the hooks' events name it.
func (b *lockBase) info() LockInfo {
	return LockInfo{Name: b.name, Group: b.group, Kind: b.kind.String(), Permits: b.permits}
}

// base returns the lockBase of a lock of this package; every kind embeds
// it, so MultiLock finds who its members are (same, the order).
func (b *lockBase) base() *lockBase { return b }

// same reports whether b and o are one lock: the same Client, name and kind
// (the group is the handle's: it plays no part).
func (b *lockBase) same(o *lockBase) bool {
	return b.c == o.c && b.name == o.name && b.kind == o.kind
}
