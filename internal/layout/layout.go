// Package layout names the Redis keys and channels of rlock's locks and
// semaphores (Redisson's layout, plus rlock's own keys), and the hash fields
// rlock keeps beside a lock's holders. lockmw takes its key names from here,
// and so does the operators' tool cmd/rlock, so the rules live in one place.
//
// See lockmw/internal/scripts/lib.lua for what each key holds.
package layout

import (
	"strconv"
	"strings"
)

// Hash fields rlock writes beside the holders' "<clientID>:<ownerID>" fields.
const (
	// FieldToken, in a lock, is the fencing token of the hold.
	FieldToken = "rlock:token"
	// FieldMeta, in a lock, is the metadata a hook stored with the hold (a
	// W3C traceparent from otelhooks).
	FieldMeta = "rlock:meta"
	// FieldHandoffs, in a lock, is how many hand-offs in a row led to the
	// hold; in a semaphore's waiter table, to the last permit handed over.
	FieldHandoffs = "rlock:handoffs"
	// FieldSeq, in a waiter table, is the arrival counter of the queue.
	FieldSeq = "rlock:seq"
	// FieldOpen, in a waiter table, is until when (server ms), at most, a
	// lock or a semaphore's permit is reserved for Redisson's waiters.
	FieldOpen = "rlock:open"
	// OwnPrefix starts every field rlock itself writes in a lock or a
	// waiter table; a holder's or waiter's field never does.
	OwnPrefix = "rlock:"
)

// Keys are the Redis names of one lock or semaphore; all share the name's
// hash slot.
type Keys struct {
	Lock      string // the Redisson hash (a mutex) or the count of free permits (a semaphore)
	Channel   string // Redisson's channel: unlock (mutex) or redisson_sc (semaphore)
	Queue     string // rlock's waiter queue (sorted set)
	Waiters   string // rlock's waiter table (hash)
	Token     string // the fencing counter; "" for a semaphore
	Handoff   string // hand-off channels' prefix (":<clientID>" appended); alone, the roll-call channel
	LatchBase string // prefix of per-request latch keys; request ID appended
	Permits   string // a semaphore's permits taken (sorted set); "" for a mutex
	Semaphore bool   // the keys of a semaphore
	// Timeouts, for a read-write lock, starts the timeout keys of its
	// readers' levels: "<Timeouts><field>:rwlock_timeout:<n>"; "" otherwise.
	Timeouts string
	// Meta, for a semaphore and a read-write lock, is rlock's hash of the
	// holders' metadata (see lockmw.Hooks.Metadata): a permit's ID, or a
	// side's field in Redisson's hash ("<clientID>:<ownerID>", the writer's
	// with ":write"), to the string stored with it; "{name}:rlock_meta" (the
	// name as is when it has a brace: the scripts derive it from the lock's
	// key, as Redisson's readers' timeout keys), in the name's slot, living
	// as long as the holds. "" for a mutex, whose metadata is the field
	// FieldMeta of its own hash.
	Meta string
}

// Mutex returns the keys of the lock name.
func Mutex(name string) Keys {
	return Keys{
		Lock:      name,
		Channel:   PrefixName("redisson_lock__channel", name),
		Queue:     OwnName("rlock_queue", name),
		Waiters:   OwnName("rlock_waiters", name),
		Token:     PrefixName("redisson_lock_token", name),
		Handoff:   OwnName("rlock_handoff", name),
		LatchBase: PrefixName("redisson_unlock_latch", name) + ":",
	}
}

// Semaphore returns the keys of the semaphore name: Redisson's
// RPermitExpirableSemaphore's count, permits and channel, and rlock's queue.
func Semaphore(name string) Keys {
	return Keys{
		Lock:      name,
		Channel:   PrefixName("redisson_sc", name),
		Queue:     OwnName("rlock_queue", name),
		Waiters:   OwnName("rlock_waiters", name),
		Handoff:   OwnName("rlock_handoff", name),
		LatchBase: PrefixName("redisson_unlock_latch", name) + ":",
		Permits:   SuffixName(name, "timeout"),
		Semaphore: true,
		Meta:      SuffixName(name, "rlock_meta"),
	}
}

// RWMutex returns the keys of the read-write lock name: Redisson's
// RReadWriteLock's hash, channel and readers' timeout keys, and rlock's
// queue and the writers' fencing counter: a mutex's keys but the channel,
// and the timeout keys.
func RWMutex(name string) Keys {
	k := Mutex(name)
	k.Channel = PrefixName("redisson_rwlock", name)
	k.Timeouts = SuffixName(name, "")
	k.Meta = SuffixName(name, "rlock_meta")
	return k
}

// InNamespace is the lock key of the lock name in the namespace ns: ns
// followed by the name in a {hash tag} (as it is when it has a brace), so
// that every key derived from it — by the rules below, and by the
// read-write lock's script for its readers' timeout keys — starts with ns
// or carries it in its tag. With ns empty it is name.
func InNamespace(ns, name string) string {
	switch {
	case ns == "":
		return name
	case strings.Contains(name, "{"):
		return ns + name
	}
	return ns + "{" + name + "}"
}

// Namespaced returns keys (of a lock key InNamespace gave: Mutex(key),
// Semaphore…) with every side key and channel that does not start with ns
// prefixed by it, so that each starts with the namespace and keeps the lock
// key's hash slot. With ns empty it is keys.
func Namespaced(ns string, keys Keys) Keys {
	if ns == "" {
		return keys
	}
	for _, k := range []*string{&keys.Channel, &keys.Queue, &keys.Waiters, &keys.Token, &keys.Handoff, &keys.LatchBase, &keys.Permits, &keys.Timeouts, &keys.Meta} {
		if *k != "" && !strings.HasPrefix(*k, ns) {
			*k = ns + *k
		}
	}
	return keys
}

// PrefixName is Redisson's rule for a key derived from a lock name: the name
// goes into a {hash tag} unless it already contains a brace.
func PrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// OwnName is the rule for rlock's own keys (not Redisson's): Redisson's
// rule gives the names "k" and "{k}" the same derived keys, which is
// harmless for its channel and token counter (a spurious wake-up, a shared
// counter) but would give two locks one waiter queue. A name with a brace
// gets a '~' after it, which a wrapped name ("{k}") never ends with.
func OwnName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name + "~"
	}
	return prefix + ":{" + name + "}"
}

// SuffixName is Redisson's rule for a key named after an object with a
// suffix: the name goes into a {hash tag} unless it already contains a
// brace ({name}:timeout, a semaphore's permits).
func SuffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// QuorumPermit is the name of permit i (from 0) of the semaphore name on a
// quorum Client (lockmw.NewQuorum): a quorum mutex of its own,
// "{name}:rlock_permit:<i>" (the name as is when it has a brace).
func QuorumPermit(name string, i int) string {
	return SuffixName(name, "rlock_permit:"+strconv.Itoa(i))
}

// QuorumPermits is the name whose mutex keys a quorum semaphore's waiters
// use, "{name}:rlock_permits": its unlock channel, on which every permit's
// release publishes, and its latch keys.
func QuorumPermits(name string) string { return SuffixName(name, "rlock_permits") }

// QuorumReaders is the set, "{name}:rlock_readers", of the reader locks of
// the read-write lock name on a quorum Client: each reader a quorum mutex of
// its own, QuorumReader(name, field).
func QuorumReaders(name string) string { return SuffixName(name, "rlock_readers") }

// QuorumReader is the lock of the reader whose owner field is field, of the
// read-write lock name on a quorum Client: "{name}:rlock_reader:<field>".
func QuorumReader(name, field string) string { return SuffixName(name, "rlock_reader:"+field) }

// QuorumRW is the name whose mutex keys both sides of the read-write lock
// name on a quorum Client wait with, "{name}:rlock_rw": its unlock channel,
// on which every reader's and the writer's release publishes.
func QuorumRW(name string) string { return SuffixName(name, "rlock_rw") }
