package main

import "strings"

// checkKinds reports every directive whose key template names the locks
// that an earlier directive's names, as another kind of lock: Redis holds a
// mutex, a semaphore and a read-write lock under one name in keys of
// different types, so the two methods would fail each other's calls (or, a
// semaphore's permits differing, count them differently). Two templates
// name the same locks when they have the same literal text with references
// in the same places ("doc#{id}" and "doc#{d.ID}"); the read and the write
// side of one read-write lock are one kind.
func checkKinds(ifaces []*iface, d *diags) {
	first := map[string]*lockSpec{} // by the template's shape
	for _, ifc := range ifaces {
		for _, m := range ifc.methods {
			l := m.lock
			if l == nil {
				continue
			}
			shape := l.shape()
			prev, ok := first[shape]
			switch {
			case !ok:
				first[shape] = l
			case prev.kind() != l.kind():
				d.add(l.pos, "%s: key %q names the locks that %s's key %q names (%s:%d): %s there, %s here; one name is one kind of lock",
					l.where, l.key, prev.where, prev.key, relPath(d.dir, prev.pos.Filename), prev.pos.Line, prev.kind(), l.kind())
			}
		}
	}
}

// shape is the key template with each reference replaced by one mark: the
// names it can make, whatever the references are called.
func (l *lockSpec) shape() string {
	var b strings.Builder
	for _, p := range l.keyParts {
		if p.ref != nil {
			b.WriteString("\x00")
			continue
		}
		b.WriteString(p.lit)
	}
	return b.String()
}
