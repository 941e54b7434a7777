package lockmw

import "sync/atomic"

// lockKind is what kind of lock a name is: a mutex or a semaphore.
type lockKind uint8

const (
	kindMutex lockKind = iota
	kindSemaphore
)

// String names the kind, as the hooks' events and the logs do.
func (k lockKind) String() string {
	if k == kindSemaphore {
		return "semaphore"
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
	return LockInfo{Name: b.name, Group: b.group, Permits: b.permits}
}

// same reports whether b and o are one lock: the same Client, name and kind
// (the group is the handle's: it plays no part).
func (b *lockBase) same(o *lockBase) bool {
	return b.c == o.c && b.name == o.name && b.kind == o.kind
}
