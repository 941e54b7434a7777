package main

import (
	"go/scanner"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// imports chooses the import names of the generated file: a package's own
// name unless the package or the file already uses it for something else.
type imports struct {
	self   *types.Package
	taken  map[string]bool   // names the package scope and the universe use
	byPath map[string]string // import path → local name
	byName map[string]string // local name → import path
	names  map[string]string // import path → the package's own name
}

func newImports(self *types.Package) *imports {
	taken := map[string]bool{}
	for _, s := range []*types.Scope{types.Universe, self.Scope()} {
		for _, n := range s.Names() {
			taken[n] = true
		}
	}
	return &imports{self: self, taken: taken, byPath: map[string]string{}, byName: map[string]string{}, names: map[string]string{}}
}

// add imports path, whose package is called name, and returns its local name.
func (im *imports) add(path, name string) string {
	if local, ok := im.byPath[path]; ok {
		return local
	}
	local := name
	for i := 2; im.taken[local] || im.byName[local] != ""; i++ {
		local = name + strconv.Itoa(i)
	}
	im.byPath[path], im.byName[local], im.names[path] = local, path, name
	return local
}

// qualifier is a types.Qualifier that imports every package it names.
func (im *imports) qualifier(p *types.Package) string {
	if p == im.self {
		return ""
	}
	return im.add(p.Path(), p.Name())
}

// typeString is t as the generated file writes it.
func (im *imports) typeString(t types.Type) string { return types.TypeString(t, im.qualifier) }

// specs are the import lines: the standard library first, then the others,
// each sorted by path, an alias only where the local name is not the
// package's own.
func (im *imports) specs() (std, other []string) {
	paths := make([]string, 0, len(im.byPath))
	for p := range im.byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		spec := strconv.Quote(p)
		if local := im.byPath[p]; local != im.names[p] {
			spec = local + " " + spec
		}
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			other = append(other, spec)
		} else {
			std = append(std, spec)
		}
	}
	return std, other
}

// A scope hands out identifiers for one generated function that hide
// nothing its body uses: the imports, the identifiers of the types it
// writes, nil, and the names it handed out before.
type scope struct {
	outer *imports
	used  map[string]bool
}

// newScope is the scope of a function whose body writes the types types.
func newScope(im *imports, types ...string) *scope {
	s := &scope{outer: im, used: map[string]bool{"nil": true}}
	for _, t := range types {
		var sc scanner.Scanner
		fset := token.NewFileSet()
		sc.Init(fset.AddFile("", -1, len(t)), []byte(t), nil, 0)
		for {
			_, tok, lit := sc.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.IDENT {
				s.used[lit] = true
			}
		}
	}
	return s
}

// taken reports whether name is in use where the function is.
func (s *scope) taken(name string) bool {
	return s.used[name] || s.outer.byName[name] != ""
}

// keep returns name when it is free (and reserves it), else a fresh name
// made from base.
func (s *scope) keep(name, base string) string {
	if name != "" && name != "_" && !s.taken(name) {
		s.used[name] = true
		return name
	}
	return s.fresh(base)
}

// fresh returns base, or base with a number, whichever is free first, and
// reserves it.
func (s *scope) fresh(base string) string {
	name := base
	for i := 2; s.taken(name); i++ {
		name = base + strconv.Itoa(i)
	}
	s.used[name] = true
	return name
}

// upperFirst is s with its first letter upper case.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// lowerFirst is s with its first letter lower case.
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}
