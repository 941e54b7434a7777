package main

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/packages"
)

// comments are the rlockgen directives of a package, by what they document.
type comments struct {
	// onMethod are the directives in the doc comments of interface methods,
	// by the position of the method's name (types.Func.Pos).
	onMethod map[token.Pos][]*ast.Comment
	// spaced are the comments of such docs that look like a directive but
	// for a space after //, by the same position.
	spaced map[token.Pos][]*ast.Comment
}

// scanComments finds every directive of pkg. A directive anywhere but in the
// doc comment of an interface method is reported to d.
func scanComments(pkg *packages.Package, d *diags) comments {
	cs := comments{onMethod: map[token.Pos][]*ast.Comment{}, spaced: map[token.Pos][]*ast.Comment{}}
	placed := map[*ast.Comment]bool{}
	for _, f := range pkg.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			it, ok := n.(*ast.InterfaceType)
			if !ok {
				return true
			}
			for _, field := range it.Methods.List {
				if field.Doc == nil {
					continue
				}
				for _, c := range field.Doc.List {
					if spaced(c.Text) && len(field.Names) > 0 {
						cs.spaced[field.Names[0].Pos()] = append(cs.spaced[field.Names[0].Pos()], c)
					}
					if !isDirective(c.Text) {
						continue
					}
					placed[c] = true
					if len(field.Names) == 0 {
						d.add(pkg.Fset.Position(c.Slash), "%s is on an embedded interface: put it on the method, in the interface that declares it", directiveName(c.Text))
						continue
					}
					pos := field.Names[0].Pos()
					cs.onMethod[pos] = append(cs.onMethod[pos], c)
				}
			}
			return true
		})
		for _, g := range f.Comments {
			for _, c := range g.List {
				if isDirective(c.Text) && !placed[c] {
					d.add(pkg.Fset.Position(c.Slash), "%s is not on an interface method: it belongs in the doc comment of a method of an interface that -type names", directiveName(c.Text))
				}
			}
		}
	}
	return cs
}

// directiveName is the directive's name as written, such as //rlock:lock.
func directiveName(text string) string {
	name, _, _ := strings.Cut(text, " ")
	name, _, _ = strings.Cut(name, "\t")
	return name
}

// spaced reports whether text is a line comment that would be a directive
// but for the space after //.
func spaced(text string) bool {
	rest, ok := strings.CutPrefix(text, "//")
	if !ok {
		return false
	}
	trimmed := strings.TrimLeft(rest, " \t")
	return trimmed != rest && strings.HasPrefix(trimmed, "rlock:")
}
