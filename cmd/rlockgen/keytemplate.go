package main

import (
	"fmt"
	"go/token"
	"strings"
)

// A part is a piece of a key template: literal text, or a reference.
type part struct {
	lit string
	ref *refExpr // nil for literal text
}

// A refExpr is a {…} reference as written: a parameter, then fields and
// argument-less method calls, such as {o.Customer.ID} or {req.Key()}.
type refExpr struct {
	text string // with its braces, as written
	root string // the parameter
	sels []selector
}

// A selector is one .Name or .Name() of a reference.
type selector struct {
	name string
	call bool
}

// parseKey parses a key template: literal text with {ref} references, and
// {{ and }} for literal braces.
func parseKey(key string) ([]part, error) {
	if key == "" {
		return nil, fmt.Errorf(`key="": the lock name must not be empty`)
	}
	var parts []part
	var lit strings.Builder
	for i := 0; i < len(key); i++ {
		switch {
		case strings.HasPrefix(key[i:], "{{"), strings.HasPrefix(key[i:], "}}"):
			lit.WriteByte(key[i])
			i++
		case key[i] == '}':
			return nil, fmt.Errorf("key %q: unmatched } (write }} for a literal brace)", key)
		case key[i] == '{':
			end := strings.IndexByte(key[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("key %q: %s is not closed with }", key, key[i:])
			}
			ref, err := parseRef(key[i : i+end+1])
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", key, err)
			}
			if lit.Len() > 0 {
				parts = append(parts, part{lit: lit.String()})
				lit.Reset()
			}
			parts = append(parts, part{ref: ref})
			i += end
		default:
			lit.WriteByte(key[i])
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, part{lit: lit.String()})
	}
	return parts, nil
}

// parseRef parses one {…} reference, braces included.
func parseRef(text string) (*refExpr, error) {
	body := text[1 : len(text)-1]
	bad := fmt.Errorf("%s: want {param}, {param.Field} or {param.Method()}", text)
	if body == "" {
		return nil, bad
	}
	segs := strings.Split(body, ".")
	r := &refExpr{text: text, root: segs[0]}
	if !token.IsIdentifier(r.root) {
		return nil, bad
	}
	for _, s := range segs[1:] {
		name, call := strings.CutSuffix(s, "()")
		if !token.IsIdentifier(name) {
			return nil, bad
		}
		r.sels = append(r.sels, selector{name: name, call: call})
	}
	return r, nil
}
