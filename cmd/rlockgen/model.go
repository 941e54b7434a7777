package main

import (
	"cmp"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/packages"
)

// An iface is an interface named by -type: what its decorator is called and
// what each of its methods does.
type iface struct {
	name    string
	ctor    string // NewLocked<Name>
	impl    string // locked<Name>
	methods []*method
}

// A method is one method of the interface; lock is nil for a method without
// a directive, which calls next's at once.
type method struct {
	name string
	sig  *types.Signature
	lock *lockSpec
}

// A lockSpec is the directive of a method, its key resolved against the
// method's parameters.
type lockSpec struct {
	directive
	keyParts []keyPart
	where    string         // Interface.Method, for messages
	pos      token.Position // the directive's
}

// A keyPart is literal text of a key, or a resolved reference.
type keyPart struct {
	lit string
	ref *ref
}

// model builds the interfaces names names, reporting broken rules to d.
func model(pkg *packages.Package, names []string, cs comments, d *diags) []*iface {
	var out []*iface
	for _, name := range names {
		if it := modelIface(pkg, name, cs, d); it != nil {
			out = append(out, it)
		}
	}
	checkKinds(out, d)
	return out
}

// modelIface builds the interface called name, or reports why it cannot.
func modelIface(pkg *packages.Package, name string, cs comments, d *diags) *iface {
	obj := pkg.Types.Scope().Lookup(name)
	if obj == nil {
		d.add(token.Position{}, "-type %s: no such type in package %s", name, pkg.Types.Name())
		return nil
	}
	pos := pkg.Fset.Position(obj.Pos())
	tn, ok := obj.(*types.TypeName)
	if !ok {
		d.add(pos, "-type %s: %s is not a type", name, name)
		return nil
	}
	it, ok := tn.Type().Underlying().(*types.Interface)
	switch {
	case tn.IsAlias():
		d.add(pos, "%s is an alias: run rlockgen where the interface is declared", name)
		return nil
	case !ok:
		d.add(pos, "%s is not an interface", name)
		return nil
	case tn.Type().(*types.Named).TypeParams().Len() > 0:
		d.add(pos, "%s has type parameters: generic interfaces are not supported", name)
		return nil
	case !it.IsMethodSet():
		d.add(pos, "%s is a constraint (it has a type set), not an interface a value can implement", name)
		return nil
	}
	ifc := &iface{name: name, ctor: "NewLocked" + name, impl: "locked" + upperFirst(name)}
	if !token.IsExported(name) {
		ifc.ctor = "newLocked" + upperFirst(name)
	}
	for _, decl := range []string{ifc.ctor, ifc.impl} {
		if o := pkg.Types.Scope().Lookup(decl); o != nil {
			d.add(pkg.Fset.Position(o.Pos()), "%s is declared here, and rlockgen declares it for %s: rename one", decl, name)
		}
	}
	directed := 0
	for _, fn := range methodsOf(pkg.Types, it) {
		if len(cs.onMethod[fn.Pos()]) > 0 {
			directed++
		}
		if m := modelMethod(pkg, ifc, fn, cs, d); m != nil {
			ifc.methods = append(ifc.methods, m)
		}
	}
	if directed == 0 && it.NumMethods() > 0 {
		d.add(pos, "%s has no method with a %s directive: there is nothing to lock", name, lockDirective)
	}
	return ifc
}

// methodsOf is the method set of it: the methods this package declares in
// source order, then those of other packages by name.
func methodsOf(self *types.Package, it *types.Interface) []*types.Func {
	fns := make([]*types.Func, it.NumMethods())
	for i := range fns {
		fns[i] = it.Method(i)
	}
	slices.SortFunc(fns, func(a, b *types.Func) int {
		aOwn, bOwn := a.Pkg() == self, b.Pkg() == self
		switch {
		case aOwn && bOwn:
			return cmp.Compare(a.Pos(), b.Pos())
		case aOwn != bOwn:
			if aOwn {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	return fns
}

// modelMethod builds one method, nil when it breaks a rule.
func modelMethod(pkg *packages.Package, ifc *iface, fn *types.Func, cs comments, d *diags) *method {
	self := pkg.Types
	where := ifc.name + "." + fn.Name()
	pos := pkg.Fset.Position(fn.Pos())
	sig := fn.Type().(*types.Signature)
	if !fn.Exported() && fn.Pkg() != self {
		d.add(pos, "%s is an unexported method of package %s: no type of package %s can implement it", where, fn.Pkg().Path(), self.Name())
		return nil
	}
	if bad, invalid := unnameable(self, sig); bad != nil {
		if invalid {
			d.add(pos, "%s: its signature has a type that does not compile: fix the package first", where)
		} else {
			d.add(pos, "%s: its signature uses %s, which package %s cannot name", where, bad, self.Name())
		}
		return nil
	}
	for _, c := range cs.spaced[fn.Pos()] {
		d.add(pkg.Fset.Position(c.Slash), "%s: %q is not a directive: write %s with no space after //", where, c.Text, lockDirective)
	}
	m := &method{name: fn.Name(), sig: sig}
	dirs := cs.onMethod[fn.Pos()]
	if len(dirs) == 0 {
		return m
	}
	dpos := pkg.Fset.Position(dirs[0].Slash)
	if len(dirs) > 1 {
		d.add(pkg.Fset.Position(dirs[1].Slash), "%s: a second %s: one lock per method", where, lockDirective)
		return nil
	}
	dir, err := parseDirective(dirs[0].Text)
	if err != nil {
		d.add(dpos, "%s: %v", where, err)
		return nil
	}
	if !checkSignature(sig, where, dpos, d) {
		return nil
	}
	key, ok := resolveKey(self, sig, dir.parts, where, dpos, d)
	if !ok {
		return nil
	}
	m.lock = &lockSpec{directive: dir, keyParts: key, where: where, pos: dpos}
	return m
}

// checkSignature checks the rules for a method with a directive: its first
// parameter is a context.Context, its last result an error.
func checkSignature(sig *types.Signature, where string, pos token.Position, d *diags) bool {
	ok := true
	if sig.Params().Len() == 0 || !isContext(sig.Params().At(0).Type()) {
		d.add(pos, "%s: the first parameter must be a context.Context: the call runs with the lock's hold context", where)
		ok = false
	}
	if sig.Results().Len() == 0 || !isError(sig.Results().At(sig.Results().Len()-1).Type()) {
		d.add(pos, "%s: the last result must be an error: it reports a lock not acquired or lost", where)
		ok = false
	}
	return ok
}

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// isError reports whether t is the predeclared error.
func isError(t types.Type) bool { return types.Identical(t, types.Universe.Lookup("error").Type()) }

// unnameable returns a type within t that package self cannot write: one
// that does not compile (invalid true), or an unexported type or field of
// another package.
func unnameable(self *types.Package, t types.Type) (bad types.Type, invalid bool) {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.Invalid {
			return t, true
		}
	case *types.Alias:
		if o := t.Obj(); o.Pkg() != nil && o.Pkg() != self && !o.Exported() {
			return t, false
		}
	case *types.Named:
		if o := t.Obj(); o.Pkg() != nil && o.Pkg() != self && !o.Exported() {
			return t, false
		}
		for i := range t.TypeArgs().Len() {
			if b, inv := unnameable(self, t.TypeArgs().At(i)); b != nil {
				return b, inv
			}
		}
	case *types.Pointer:
		return unnameable(self, t.Elem())
	case *types.Slice:
		return unnameable(self, t.Elem())
	case *types.Array:
		return unnameable(self, t.Elem())
	case *types.Chan:
		return unnameable(self, t.Elem())
	case *types.Map:
		if b, inv := unnameable(self, t.Key()); b != nil {
			return b, inv
		}
		return unnameable(self, t.Elem())
	case *types.Tuple:
		for i := range t.Len() {
			if b, inv := unnameable(self, t.At(i).Type()); b != nil {
				return b, inv
			}
		}
	case *types.Signature:
		if b, inv := unnameable(self, t.Params()); b != nil {
			return b, inv
		}
		return unnameable(self, t.Results())
	case *types.Struct:
		for i := range t.NumFields() {
			f := t.Field(i)
			if !f.Exported() && f.Pkg() != self {
				return t, false
			}
			if b, inv := unnameable(self, f.Type()); b != nil {
				return b, inv
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			m := t.Method(i)
			if !m.Exported() && m.Pkg() != self {
				return t, false
			}
		}
	}
	return nil, false
}
