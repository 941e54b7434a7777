package main

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
	"unicode"
)

// A ref is a {…} reference resolved against a method's parameters: the
// parameter, then the steps that reach the value the key prints.
type ref struct {
	text     string // as written, with braces
	param    int    // index of the parameter in the signature
	steps    []step
	nilFinal bool // the value is a pointer or an interface: nil is an error
	isString bool // the value is a string: written as it is, not through fmt.Sprint
}

// A step is one selector of a reference: a field, or a call of a method
// without arguments.
type step struct {
	name     string // "" for an embedded field the package cannot name: promoted through
	call     bool
	errs     bool // the method returns an error too
	nilCheck bool // the value before this step must not be nil (the step dereferences it)
}

// resolveKey resolves the references of a key template against sig's
// parameters, reporting each one that does not resolve.
func resolveKey(self *types.Package, sig *types.Signature, parts []part, where string, pos token.Position, d *diags) ([]keyPart, bool) {
	out := make([]keyPart, 0, len(parts))
	ok := true
	for _, p := range parts {
		if p.ref == nil {
			if strings.IndexFunc(p.lit, unicode.IsControl) >= 0 {
				d.add(pos, "%s: the key %q has a control character: no lock name may", where, p.lit)
				ok = false
			}
			out = append(out, keyPart{lit: p.lit})
			continue
		}
		r, err := resolveRef(self, sig, p.ref)
		if err != nil {
			d.add(pos, "%s: %v", where, err)
			ok = false
			continue
		}
		out = append(out, keyPart{ref: r})
	}
	return out, ok
}

// resolveRef resolves one reference.
func resolveRef(self *types.Package, sig *types.Signature, e *refExpr) (*ref, error) {
	r := &ref{text: e.text, param: -1}
	params := sig.Params()
	var names []string
	for i := range params.Len() {
		if n := params.At(i).Name(); n != "" && n != "_" {
			names = append(names, n)
			if n == e.root {
				r.param = i
			}
		}
	}
	switch {
	case r.param < 0:
		return nil, fmt.Errorf("%s: %s is not a parameter (the parameters are %s)", e.text, e.root, strings.Join(names, ", "))
	case r.param == 0 && isContext(params.At(0).Type()):
		return nil, fmt.Errorf("%s: %s is the call's context, not part of a key", e.text, e.root)
	}
	qual := types.RelativeTo(self)
	t := params.At(r.param).Type()
	addressable := true
	for _, sel := range e.sels {
		steps, next, err := resolveSel(self, t, addressable, sel, e.text)
		if err != nil {
			return nil, err
		}
		r.steps = append(r.steps, steps...)
		addressable = !sel.call && (addressable || isPointer(t))
		t = next
	}
	if b, ok := t.(*types.Basic); ok && b.Kind() == types.Invalid {
		return nil, fmt.Errorf("%s: its type does not compile: fix the package first", e.text)
	}
	if where := addressIn(t, e.text[1:len(e.text)-1], true, map[types.Type]bool{}); where != "" {
		return nil, fmt.Errorf("%s: fmt.Sprint would write the address %s holds, not a value (a %s): the key would differ from call to call; reference a field that holds a value, or give the type a String method", e.text, where, types.TypeString(t, qual))
	}
	r.nilFinal = isPointer(t) || isInterface(t)
	r.isString = types.Identical(t, types.Typ[types.String])
	return r, nil
}

// resolveSel resolves one selector on a value of type t: the steps (the
// embedded fields it goes through, then the field or method) and the type
// of the result.
func resolveSel(self *types.Package, t types.Type, addressable bool, sel selector, text string) ([]step, types.Type, error) {
	qual := types.RelativeTo(self)
	obj, index, indirect := types.LookupFieldOrMethod(t, addressable, self, sel.name)
	switch {
	case obj == nil && index != nil:
		return nil, nil, fmt.Errorf("%s: %s is ambiguous in %s", text, sel.name, types.TypeString(t, qual))
	case obj == nil && indirect:
		return nil, nil, fmt.Errorf("%s: %s has a pointer receiver, and the value of a method call is not addressable", text, sel.name)
	case obj == nil:
		return nil, nil, fmt.Errorf("%s: %s has no field or method %s", text, types.TypeString(t, qual), sel.name)
	}
	var steps []step
	cur := t
	for _, i := range index[:len(index)-1] { // embedded fields
		ptr := isPointer(cur)
		f := deref(cur).Underlying().(*types.Struct).Field(i)
		s := step{name: f.Name(), nilCheck: ptr}
		if !f.Exported() && f.Pkg() != self {
			if isPointer(f.Type()) {
				return nil, nil, fmt.Errorf("%s: %s is reached through %s, an unexported embedded pointer of package %s, which the generated code cannot check for nil", text, sel.name, f.Name(), f.Pkg().Name())
			}
			s.name = ""
		}
		steps = append(steps, s)
		cur = f.Type()
	}
	switch o := obj.(type) {
	case *types.Var:
		if sel.call {
			return nil, nil, fmt.Errorf("%s: %s is a field, not a method: write it without ()", text, sel.name)
		}
		return append(steps, step{name: sel.name, nilCheck: isPointer(cur)}), o.Type(), nil
	case *types.Func:
		if !sel.call {
			return nil, nil, fmt.Errorf("%s: %s is a method: write %s()", text, sel.name, sel.name)
		}
		msig := o.Type().(*types.Signature)
		res := msig.Results()
		switch {
		case msig.Params().Len() > 0:
			return nil, nil, fmt.Errorf("%s: %s takes arguments; a key may call only methods without", text, sel.name)
		case res.Len() != 1 && (res.Len() != 2 || !isError(res.At(1).Type())):
			return nil, nil, fmt.Errorf("%s: %s must return one value, or a value and an error", text, sel.name)
		}
		recvPtr := isPointer(msig.Recv().Type())
		s := step{name: sel.name, call: true, errs: res.Len() == 2, nilCheck: isInterface(cur) || (isPointer(cur) && !recvPtr)}
		return append(steps, s), res.At(0).Type(), nil
	}
	return nil, nil, fmt.Errorf("%s: %s is neither a field nor a method", text, sel.name)
}

// isPointer reports whether t is a pointer type.
func isPointer(t types.Type) bool {
	_, ok := t.Underlying().(*types.Pointer)
	return ok
}

// isInterface reports whether t is an interface type.
func isInterface(t types.Type) bool { return types.IsInterface(t) }

// deref is the type t points to, or t.
func deref(t types.Type) types.Type {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
