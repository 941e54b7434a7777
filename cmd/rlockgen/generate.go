package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
)

// A config is what one run of rlockgen generates.
type config struct {
	dir    string   // the package's directory
	from   string   // paths in messages are relative to it when below it; "" for dir
	types  []string // the interfaces, as -type lists them
	output string   // the file to write; "" for <first type>_rlock.go in dir
	tags   []string // build tags to load the package with
}

// outputPath is the file the run writes, absolute.
func (c config) outputPath() (string, error) {
	out := c.output
	if out == "" {
		out = strings.ToLower(c.types[0]) + "_rlock.go"
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(c.dir, out)
	}
	return filepath.Abs(out)
}

// generate returns the generated file and where it goes. An error is a
// *ruleError when the package breaks rlockgen's rules.
func generate(c config) (path string, src []byte, err error) {
	if len(c.types) == 0 {
		return "", nil, fmt.Errorf("-type names no interface")
	}
	seen := map[string]bool{}
	for _, t := range c.types {
		if seen[t] {
			return "", nil, fmt.Errorf("-type lists %s twice", t)
		}
		seen[t] = true
	}
	path, err = c.outputPath()
	if err != nil {
		return "", nil, err
	}
	pkg, err := load(c.dir, path, c.tags)
	if err != nil {
		return "", nil, err
	}
	d := &diags{dir: cmp.Or(c.from, c.dir)}
	cs := scanComments(pkg, d)
	ifaces := model(pkg, c.types, cs, d)
	if err := d.err(); err != nil {
		return "", nil, err
	}
	src, err = emit(pkg.Types, ifaces)
	return path, src, err
}
