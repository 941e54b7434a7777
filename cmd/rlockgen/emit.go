package main

import (
	"bytes"
	"fmt"
	"go/format"
	"go/types"
	"strconv"
	"strings"
	"time"
)

// lockmwPath is the import path of the package the generated code uses.
const lockmwPath = "github.com/go-rlock/rlock/lockmw"

// A file is the generated file being written.
type file struct {
	pkg *types.Package
	im  *imports
	buf bytes.Buffer

	// The local names of the packages the generated code itself uses.
	context, fmt, time, lockmw string
}

// emit writes the generated file for ifaces of package pkg, formatted.
func emit(pkg *types.Package, ifaces []*iface) ([]byte, error) {
	f := &file{pkg: pkg, im: newImports(pkg)}
	// The generated code's own imports first, so that they keep their names;
	// then those of every type a signature names.
	f.lockmw = f.im.add(lockmwPath, "lockmw")
	needs := needsOf(ifaces)
	if needs.context {
		f.context = f.im.add("context", "context")
	}
	if needs.fmt {
		f.fmt = f.im.add("fmt", "fmt")
	}
	if needs.time {
		f.time = f.im.add("time", "time")
	}
	for _, ifc := range ifaces {
		for _, m := range ifc.methods {
			f.im.typeString(m.sig)
		}
	}
	for _, ifc := range ifaces {
		f.iface(ifc)
	}
	var out bytes.Buffer
	out.WriteString(header)
	fmt.Fprintf(&out, "\npackage %s\n\n", pkg.Name())
	std, other := f.im.specs()
	out.WriteString("import (\n")
	for _, s := range std {
		fmt.Fprintf(&out, "\t%s\n", s)
	}
	if len(std) > 0 && len(other) > 0 {
		out.WriteString("\n")
	}
	for _, s := range other {
		fmt.Fprintf(&out, "\t%s\n", s)
	}
	out.WriteString(")\n")
	out.Write(f.buf.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rlockgen made code that does not parse (a bug: please report it): %v\n%s", err, out.Bytes())
	}
	return src, nil
}

// needs says which packages the generated code itself uses.
type needs struct{ context, fmt, time bool }

func needsOf(ifaces []*iface) needs {
	var n needs
	for _, ifc := range ifaces {
		for _, m := range ifc.methods {
			if m.lock == nil {
				continue
			}
			n.context = true
			n.time = n.time || m.lock.hasWait || m.lock.lease > 0 || m.lock.minHold > 0
			for _, p := range m.lock.keyParts {
				n.fmt = n.fmt || (p.ref != nil && (!p.ref.isString || p.ref.canFail()))
			}
		}
	}
	return n
}

// canFail reports whether computing the reference can fail.
func (r *ref) canFail() bool {
	if r.nilFinal {
		return true
	}
	for _, s := range r.steps {
		if s.nilCheck || s.errs {
			return true
		}
	}
	return false
}

// p writes one formatted line or more.
func (f *file) p(format string, args ...any) { fmt.Fprintf(&f.buf, format, args...) }

// iface writes the constructor, the type and the methods of one decorator.
func (f *file) iface(ifc *iface) {
	methodNames := newScope(f.im)
	for _, m := range ifc.methods {
		methodNames.used[m.name] = true
	}
	fc, fnext := methodNames.fresh("c"), methodNames.fresh("next")

	f.p("\n// %s returns a %s whose methods call next's, those with a lock\n", ifc.ctor, ifc.name)
	f.p("// directive while holding the lock it names on c:\n//\n")
	for _, m := range ifc.methods {
		if m.lock != nil {
			f.p("//   - %s: %s\n", m.name, m.lock.describe())
		}
	}
	f.p("//\n// A locked method runs next's as lockmw.Do does: with the lock's hold\n")
	f.p("// context as its context, and the lock released when it returns or panics.\n")
	f.p("// It panics when c or next is nil.\n")
	f.p("func %s(c *%s.Client, next %s) %s {\n", ifc.ctor, f.lockmw, ifc.name, ifc.name)
	f.p("if c == nil {\npanic(%q)\n}\n", fmt.Sprintf("%s: %s(nil, next): a *lockmw.Client is required", f.pkg.Name(), ifc.ctor))
	f.p("if next == nil {\npanic(%q)\n}\n", fmt.Sprintf("%s: %s(c, nil): a %s is required", f.pkg.Name(), ifc.ctor, ifc.name))
	f.p("return &%s{%s: c, %s: next}\n}\n", ifc.impl, fc, fnext)

	f.p("\n// %s is the %s that %s returns.\n", ifc.impl, ifc.name, ifc.ctor)
	f.p("type %s struct {\n%s *%s.Client\n%s %s\n}\n", ifc.impl, fc, f.lockmw, fnext, ifc.name)
	for _, m := range ifc.methods {
		mg := f.newMethod(ifc, m, fc, fnext)
		if m.lock == nil {
			mg.passThrough()
		} else {
			mg.locked()
		}
	}
}

// describe is the directive's lock in words, for doc comments.
func (l *lockSpec) describe() string {
	s := strconv.Quote(l.key)
	if l.rw != "" {
		s += ", " + string(l.rw) + " side"
	}
	if l.hasWait {
		s += ", wait " + l.wait.String()
		if l.wait == 0 {
			s += " (one attempt)"
		}
	}
	if l.lease > 0 {
		s += ", lease " + l.lease.String()
	}
	if l.minHold > 0 {
		s += ", min hold " + l.minHold.String()
	}
	if l.permits > 0 {
		s += fmt.Sprintf(", %d permits", l.permits)
	}

	if l.fencing {
		s += ", fencing"
	}
	if l.hasGroup {
		s += ", group " + strconv.Quote(l.group)
	}
	return s
}

// durationExpr is d as Go source, such as 5 * time.Second.
func durationExpr(d time.Duration, timePkg string) string {
	if d == 0 {
		return "0"
	}
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return timePkg + "." + u.name
			}
			return fmt.Sprintf("%d * %s.%s", d/u.d, timePkg, u.name)
		}
	}
	return fmt.Sprintf("%s.Duration(%d)", timePkg, int64(d))
}

// join joins non-empty strings with sep.
func join(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}
