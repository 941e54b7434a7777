package main

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
)

// A methodGen writes one method of a decorator.
type methodGen struct {
	*file
	ifc    *iface
	m      *method
	s      *scope
	recv   string          // the receiver
	c      string          // the decorator's Client field
	next   string          // the decorator's next field
	params []string        // the parameters' names in the generated method
	fail   string          // how a failed key returns, up to its error: "return zero, "
	err    string          // the error variable, once declared; "" before
	nilled map[string]bool // the nil checks written so far
}

// newMethod names the receiver and the parameters of m's generated method.
func (f *file) newMethod(ifc *iface, m *method, c, next string) *methodGen {
	res := m.sig.Results()
	body := make([]string, 0, res.Len())
	for i := range res.Len() {
		body = append(body, f.im.typeString(res.At(i).Type()))
	}
	g := &methodGen{file: f, ifc: ifc, m: m, s: newScope(f.im, body...), c: c, next: next}
	g.recv = g.s.fresh("l")
	params := m.sig.Params()
	for i := range params.Len() {
		name, base := params.At(i).Name(), fmt.Sprintf("p%d", i)
		if i == 0 && (name == "" || name == "_") {
			base = "ctx"
		} else if name != "" && name != "_" {
			base = name
		}
		g.params = append(g.params, g.s.keep(name, base))
	}
	return g
}

// signature is the method's name, parameters and results as Go source.
func (g *methodGen) signature() string {
	params := g.m.sig.Params()
	ps := make([]string, params.Len())
	for i := range ps {
		t := params.At(i).Type()
		if g.m.sig.Variadic() && i == len(ps)-1 {
			ps[i] = g.params[i] + " ..." + g.im.typeString(t.(*types.Slice).Elem())
			continue
		}
		ps[i] = g.params[i] + " " + g.im.typeString(t)
	}
	res := g.m.sig.Results()
	rs := make([]string, res.Len())
	for i := range rs {
		rs[i] = g.im.typeString(res.At(i).Type())
	}
	out := fmt.Sprintf("(%s *%s) %s(%s)", g.recv, g.ifc.impl, g.m.name, strings.Join(ps, ", "))
	switch len(rs) {
	case 0:
		return out
	case 1:
		return out + " " + rs[0]
	}
	return out + " (" + strings.Join(rs, ", ") + ")"
}

// call is the call of next's method with the method's parameters, ctx
// being the first one's name.
func (g *methodGen) call() string {
	args := strings.Join(g.params, ", ")
	if g.m.sig.Variadic() {
		args += "..."
	}
	return fmt.Sprintf("%s.%s.%s(%s)", g.recv, g.next, g.m.name, args)
}

// passThrough writes a method without a directive: it calls next's.
func (g *methodGen) passThrough() {
	g.p("\n// %s calls next's %s: it has no lock directive.\n", g.m.name, g.m.name)
	g.p("func %s {\n", g.signature())
	if g.m.sig.Results().Len() > 0 {
		g.p("return ")
	}
	g.p("%s\n}\n", g.call())
}

// locked writes a method with a directive: it renders the key, makes the
// Mutex, Semaphore or RWMutex side and runs next's method under it.
func (g *methodGen) locked() {
	l := g.m.lock
	g.p("\n// %s calls next's %s while holding the lock\n// %s.\n", g.m.name, g.m.name, l.describe())
	g.p("func %s {\n", g.signature())
	vals := g.resultVars()
	key := g.keyExpr()
	keyVar, lockVar := g.s.fresh("key"), g.s.fresh("lock")
	g.p("%s := %s\n", keyVar, key)
	var opts []string
	if l.fencing {
		opts = append(opts, g.lockmw+".WithFencing()")
	}
	if l.group != "" {
		opts = append(opts, fmt.Sprintf("%s.WithGroup(%q)", g.lockmw, l.group))
	}
	args := join(", ", keyVar, strings.Join(opts, ", "))
	ctor := "Mutex(" + args + ")"
	switch {
	case l.permits > 0:
		ctor = "Semaphore(" + join(", ", keyVar, fmt.Sprint(l.permits), strings.Join(opts, ", ")) + ")"
	case l.rw == readSide:
		ctor = "RWMutex(" + args + ").RLocker()" // the read side as a Locker
	case l.rw == writeSide:
		ctor = "RWMutex(" + args + ")" // an RWMutex is a Locker of its write side
	}
	g.p("%s := %s.%s.%s\n", lockVar, g.recv, g.c, ctor)
	var callOpts []string
	if l.hasWait {
		callOpts = append(callOpts, fmt.Sprintf("%s.WithWait(%s)", g.lockmw, durationExpr(l.wait, g.time)))
	}
	if l.lease > 0 {
		callOpts = append(callOpts, fmt.Sprintf("%s.WithLease(%s)", g.lockmw, durationExpr(l.lease, g.time)))
	}
	if l.minHold > 0 {
		callOpts = append(callOpts, fmt.Sprintf("%s.WithMinHold(%s)", g.lockmw, durationExpr(l.minHold, g.time)))
	}
	g.run(lockVar, vals, strings.Join(callOpts, ", "))
	g.p("}\n")
}

// resultVars declares what the method returns besides its error when that
// is needed (several values, or a key that can fail), sets how a failed key
// returns, and returns the variables.
func (g *methodGen) resultVars() []string {
	res := g.m.sig.Results()
	n := res.Len() - 1
	if n == 0 {
		g.fail = "return "
		return nil
	}
	if n == 1 && !g.keyCanFail() {
		return nil
	}
	vars := make([]string, n)
	for i := range n {
		base := fmt.Sprintf("r%d", i)
		if n == 1 {
			base = "zero"
		}
		name := res.At(i).Name()
		if n == 1 {
			name = ""
		}
		vars[i] = g.s.keep(name, base)
	}
	if n == 1 {
		g.p("var %s %s\n", vars[0], g.im.typeString(res.At(0).Type()))
	} else {
		g.p("var (\n")
		for i, v := range vars {
			g.p("%s %s\n", v, g.im.typeString(res.At(i).Type()))
		}
		g.p(")\n")
	}
	g.fail = "return " + strings.Join(vars, ", ") + ", "
	return vars
}

// keyCanFail reports whether computing the key can fail.
func (g *methodGen) keyCanFail() bool {
	for _, p := range g.m.lock.keyParts {
		if p.ref != nil && p.ref.canFail() {
			return true
		}
	}
	return false
}

// run writes the call of next's method under lockVar and the return.
func (g *methodGen) run(lockVar string, vals []string, opts string) {
	ctx := g.params[0]
	res := g.m.sig.Results()
	tail := "}"
	if opts != "" {
		tail = "}, " + opts
	}
	switch res.Len() {
	case 1:
		g.p("return %s.WithLock(%s, %s, func(%s %s.Context) error {\n", g.lockmw, ctx, lockVar, ctx, g.context)
		g.p("return %s\n%s)\n", g.call(), tail)
	case 2:
		g.p("return %s.Do(%s, %s, func(%s %s.Context) (%s, error) {\n", g.lockmw, ctx, lockVar, ctx, g.context, g.im.typeString(res.At(0).Type()))
		g.p("return %s\n%s)\n", g.call(), tail)
	default:
		op := ":="
		if g.err != "" {
			op = "="
		} else {
			g.err = g.s.fresh("err")
		}
		g.p("%s %s %s.WithLock(%s, %s, func(%s %s.Context) (%s error) {\n", g.err, op, g.lockmw, ctx, lockVar, ctx, g.context, g.err)
		g.p("%s, %s = %s\nreturn %s\n%s)\n", strings.Join(vals, ", "), g.err, g.call(), g.err, tail)
		g.p("return %s, %s\n", strings.Join(vals, ", "), g.err)
	}
}

// keyExpr writes what computing the key needs (nil checks, method calls
// that return an error) and returns the key as an expression.
func (g *methodGen) keyExpr() string {
	var parts []string
	for _, p := range g.m.lock.keyParts {
		if p.ref == nil {
			parts = append(parts, fmt.Sprintf("%q", p.lit))
			continue
		}
		parts = append(parts, g.refExpr(p.ref))
	}
	return strings.Join(parts, " + ")
}

// refExpr writes what computing r needs and returns its text as an
// expression: the value itself for a string, else fmt.Sprint of it.
func (g *methodGen) refExpr(r *ref) string {
	where := g.ifc.name + "." + g.m.name
	cur := g.params[r.param]
	var conds []string
	flush := func() {
		if len(conds) > 0 {
			msg := fmt.Sprintf("%%w: %s: key reference %s: nil pointer or interface", where, r.text)
			g.p("if %s {\n%s%s.Errorf(%q, %s.ErrInvalidArgument)\n}\n", strings.Join(conds, " || "), g.fail, g.fmt, msg, g.lockmw)
			conds = nil
		}
	}
	for i, st := range r.steps {
		if st.nilCheck {
			conds = g.nilCheck(conds, cur)
		}
		switch {
		case st.name == "":
			continue
		case !st.call:
			cur += "." + st.name
			continue
		}
		call := cur + "." + st.name + "()"
		if !st.errs && i == len(r.steps)-1 && !r.nilFinal {
			cur = call
			continue
		}
		flush()
		v := g.s.fresh(tempName(st.name))
		if !st.errs {
			g.p("%s := %s\n", v, call)
			cur = v
			continue
		}
		if g.err == "" {
			g.err = g.s.fresh("err")
		}
		g.p("%s, %s := %s\n", v, g.err, call)
		msg := fmt.Sprintf("%%w: %s: key reference %s: %%w", where, r.text)
		g.p("if %s != nil {\n%s%s.Errorf(%q, %s.ErrInvalidArgument, %s)\n}\n", g.err, g.fail, g.fmt, msg, g.lockmw, g.err)
		cur = v
	}
	if r.nilFinal {
		conds = g.nilCheck(conds, cur)
	}
	flush()
	if r.isString {
		return cur
	}
	return g.fmt + ".Sprint(" + cur + ")"
}

// nilCheck adds the check that expr is not nil to conds, unless an
// earlier reference of the key checked it.
func (g *methodGen) nilCheck(conds []string, expr string) []string {
	if g.nilled == nil {
		g.nilled = map[string]bool{}
	}
	if g.nilled[expr] {
		return conds
	}
	g.nilled[expr] = true
	return append(conds, expr+" == nil")
}

// tempName is the variable holding a method's value: the method's name
// without a Get prefix, first letter lower case ("GetOrder" gives "order").
func tempName(method string) string {
	name := method
	if rest, ok := strings.CutPrefix(name, "Get"); ok && rest != "" && token.IsExported(rest) {
		name = rest
	}
	name = lowerFirst(name)
	if !token.IsIdentifier(name) {
		return "v"
	}
	return name
}
