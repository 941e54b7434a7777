package lockmw

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-rlock/rlock/internal/keyslot"
	"github.com/go-rlock/rlock/internal/layout"
)

// MaxNameLen is the longest lock name accepted, in bytes.
const MaxNameLen = 1024

// reservedPrefixes start the keys kept beside a lock; a lock named like
// one would collide with another lock's queue, counter or latch.
var reservedPrefixes = []string{"rlock_queue:", "rlock_waiters:", "redisson_lock_token:", "redisson_unlock_latch:"}

// keys are the Redis names a mutex uses; all share the name's hash slot.
type keys struct {
	lock      string // the Redisson hash
	channel   string // Redisson's unlock channel
	queue     string // waiter queue (sorted set)
	waiters   string // waiter table (hash)
	token     string // fencing counter
	handoff   string // hand-off channels' prefix (":<clientID>" appended); alone, the roll-call channel
	latchBase string // prefix of per-request latch keys; request ID appended
	permits   string // a semaphore's permits taken (sorted set); "" for a mutex
	sem       bool   // the keys of a semaphore
	timeouts  string // a read-write lock's readers' timeout keys' prefix; "" otherwise
	meta      string // a semaphore's or read-write lock's holders' metadata (hash); "" for a mutex
	wakeAll   bool   // a quorum read-write lock's waiters' (quorumrw.go): an unlock message wakes every waiter
}

// newKeys returns the keys of the lock name in the namespace ns
// (internal/layout names them; WithNamespace).
func newKeys(ns, name string) keys {
	return fromLayout(layout.Namespaced(ns, layout.Mutex(layout.InNamespace(ns, name))))
}

// newSemKeys returns the keys of the semaphore name: Redisson's
// RPermitExpirableSemaphore's count, permits and channel, and rlock's queue.
func newSemKeys(ns, name string) keys {
	return fromLayout(layout.Namespaced(ns, layout.Semaphore(layout.InNamespace(ns, name))))
}

// newRWKeys returns the keys of the read-write lock name (RWMutex).
func newRWKeys(ns, name string) keys {
	return fromLayout(layout.Namespaced(ns, layout.RWMutex(layout.InNamespace(ns, name))))
}

// fromLayout copies the names internal/layout gives.
func fromLayout(l layout.Keys) keys {
	return keys{
		lock:      l.Lock,
		channel:   l.Channel,
		queue:     l.Queue,
		waiters:   l.Waiters,
		token:     l.Token,
		handoff:   l.Handoff,
		latchBase: l.LatchBase,
		permits:   l.Permits,
		sem:       l.Semaphore,
		timeouts:  l.Timeouts,
		meta:      l.Meta,
	}
}

// all returns the keys and channels that must share the lock's hash slot.
func (k *keys) all() []string {
	if k.sem {
		return []string{k.lock, k.channel, k.queue, k.waiters, k.permits, k.handoff, k.meta}
	}
	if k.timeouts != "" { // a reader's timeout key: the prefix decides its slot
		return []string{k.lock, k.channel, k.queue, k.waiters, k.token, k.handoff, k.timeouts + "x:rwlock_timeout:1", k.meta}
	}
	return []string{k.lock, k.channel, k.queue, k.waiters, k.token, k.handoff}
}

// validateName checks a name that arrives at call time, for a lock whose
// keys newKeys gives in the namespace ns.
func validateName(name, ns string, cluster bool, newKeys func(ns, name string) keys) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %q contains a control character", ErrInvalidName, name)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%w: %q is named like the keys rlock keeps beside a lock (%s…)", ErrInvalidName, name, p)
		}
	}
	if cluster {
		k := newKeys(ns, name)
		slot := keySlot(k.lock)
		for _, key := range k.all()[1:] {
			if keySlot(key) != slot {
				return fmt.Errorf("%w: on a cluster %q and %q fall in different hash slots; put the name in a {hash tag}", ErrInvalidName, k.lock, key)
			}
		}
	}
	return nil
}

// keySlot is Redis Cluster's hash slot of key (internal/keyslot).
func keySlot(key string) int { return keyslot.Of(key) }
