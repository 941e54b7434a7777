package main

import (
	"errors"
	"strings"
	"unicode"

	"github.com/go-rlock/rlock/internal/layout"
)

// namespace is -namespace: the prefix a namespaced lockmw Client
// (lockmw.WithNamespace) puts before every key and channel of its locks.
// Names given to and shown by the commands are the names as the
// application gave them; the keys and channels are found through
// internal/layout, as lockmw finds them. "" is no namespace.
type namespace string

// String is the flag's value.
func (ns *namespace) String() string { return string(*ns) }

// Set checks a -namespace value by lockmw.WithNamespace's rules.
func (ns *namespace) Set(s string) error {
	switch {
	case s == "":
		return errors.New("must not be empty (leave the flag out for no namespace)")
	case strings.ContainsAny(s, "{}"):
		return errors.New("must not contain a brace")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return errors.New("must not contain a control character")
	}
	*ns = namespace(s)
	return nil
}

// key is the lock key of name.
func (ns namespace) key(name string) string { return layout.InNamespace(string(ns), name) }

// mutex, semaphore and rwMutex are the keys and channels of name's lock of
// that kind.
func (ns namespace) mutex(name string) layout.Keys {
	return layout.Namespaced(string(ns), layout.Mutex(ns.key(name)))
}

func (ns namespace) semaphore(name string) layout.Keys {
	return layout.Namespaced(string(ns), layout.Semaphore(ns.key(name)))
}

func (ns namespace) rwMutex(name string) layout.Keys {
	return layout.Namespaced(string(ns), layout.RWMutex(ns.key(name)))
}

// match is the SCAN pattern of the namespace's keys, or pattern itself
// without a namespace (a namespace's names are matched by nameOf's caller:
// their keys carry a {hash tag} the pattern does not).
func (ns namespace) match(pattern string) string {
	if ns == "" {
		return pattern
	}
	return globEscape(string(ns)) + "*"
}

// nameOf is the name whose lock key is key, as the application gave it:
// the namespace and the {} around a name without a brace taken off, so that
// ns.key(name) is key again. False for a key that cannot be a lock key of
// the namespace: outside it, without a brace, or one of its side keys
// (queue, waiter table, fencing counter, channels' names).
func (ns namespace) nameOf(key string) (string, bool) {
	if ns == "" {
		return key, true
	}
	rest, ok := strings.CutPrefix(key, string(ns))
	if !ok || !strings.Contains(rest, "{") || ns.isSideKey(key) {
		return "", false
	}
	if inner, ok := strings.CutPrefix(rest, "{"); ok && strings.HasSuffix(inner, "}") {
		if inner = inner[:len(inner)-1]; !strings.Contains(inner, "{") {
			return inner, true
		}
	}
	return rest, true
}

// isSideKey reports whether key is one of the namespace's side keys: those
// layout derives from a lock key, ns + "<kind>:" + ns + …. The prefixes are
// taken from layout, for every kind.
func (ns namespace) isSideKey(key string) bool {
	lockKey := ns.key("x")
	for _, k := range []layout.Keys{ns.mutex("x"), ns.semaphore("x"), ns.rwMutex("x")} {
		for _, side := range []string{k.Channel, k.Queue, k.Waiters, k.Token, k.Handoff, k.LatchBase} {
			if i := strings.Index(side, lockKey); i > len(ns) && strings.HasPrefix(key, side[:i]+string(ns)) {
				return true
			}
		}
	}
	return false
}
