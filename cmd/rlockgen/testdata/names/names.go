// Package names is a golden case: parameters, package-level names and
// result types that collide with what the generated code uses.
package names

import "context"

// fmt and lockmw take the names the generated file would import under.
var fmt = "fmt"

func lockmw() {}

// key is a type whose name a local variable would hide.
type key struct{ ID string }

// Names has parameters named like the generated code's variables.
type Names interface {
	//rlock:lock key="s:{fmt}:{l}:{lock}:{zero}:{time}" wait=1s
	Shadow(ctx context.Context, fmt string, l int, lock bool, zero uint, time int) (key, error)

	//rlock:lock key="e:{err}:{k.ID}"
	Errs(ctx context.Context, err error, k *key) (key, int, error)

	//rlock:lock key="blank"
	Blank(context.Context, int, string) error

	Unnamed(context.Context, string) error
}

var _ = fmt
var _ = lockmw
