package main

import (
	"go/types"
)

// addressIn returns where a value of type t, called path, holds something
// that fmt.Sprint prints as a memory address (a pointer, a func, a channel,
// an unsafe.Pointer), such as "o.Customer"; "" when it holds none. A key
// that prints an address differs from call to call, so calls that should
// exclude each other would take different locks.
//
// It follows fmt: a value whose method set has String, Error or Format is
// printed by that method, except where fmt cannot call it (below an
// unexported field, methods is false); a pointer at the top (not a
// Stringer) is refused too, as its pointee may change. Interfaces are
// let through: their dynamic type is not known here.
func addressIn(t types.Type, path string, methods bool, seen map[types.Type]bool) string {
	if methods && formats(t) {
		return ""
	}
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Pointer, *types.Signature, *types.Chan:
		return path
	case *types.Basic:
		if u.Kind() == types.UnsafePointer {
			return path
		}
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			if w := addressIn(f.Type(), path+"."+f.Name(), methods && f.Exported(), seen); w != "" {
				return w
			}
		}
	case *types.Array:
		return addressIn(u.Elem(), path+"[…]", methods, seen)
	case *types.Slice:
		return addressIn(u.Elem(), path+"[…]", methods, seen)
	case *types.Map:
		if w := addressIn(u.Key(), path+"'s keys", methods, seen); w != "" {
			return w
		}
		return addressIn(u.Elem(), path+"[…]", methods, seen)
	}
	return ""
}

// formats reports whether fmt prints a value of type t with one of its
// methods: String() string, Error() string or Format(fmt.State, rune).
func formats(t types.Type) bool {
	ms := types.NewMethodSet(t)
	for _, name := range []string{"String", "Error", "Format"} {
		sel := ms.Lookup(nil, name)
		if sel == nil {
			continue
		}
		sig := sel.Obj().Type().(*types.Signature)
		switch {
		case name == "Format" && sig.Params().Len() == 2 && sig.Results().Len() == 0:
			return true
		case name != "Format" && sig.Params().Len() == 0 && sig.Results().Len() == 1 && types.Identical(sig.Results().At(0).Type(), types.Typ[types.String]):
			return true
		}
	}
	return false
}
