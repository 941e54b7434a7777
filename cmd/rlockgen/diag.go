package main

import (
	"cmp"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// A diag is one broken rule: where, and what.
type diag struct {
	pos token.Position
	msg string
}

// diags collects the broken rules of a run. Its error prints one
// "file:line: message" line per rule, sorted, with file relative to dir.
type diags struct {
	dir  string
	list []diag
}

// add records a broken rule at pos.
func (d *diags) add(pos token.Position, format string, args ...any) {
	d.list = append(d.list, diag{pos: pos, msg: fmt.Sprintf(format, args...)})
}

// err returns the recorded rules as one error, or nil when there are none.
func (d *diags) err() error {
	if len(d.list) == 0 {
		return nil
	}
	list := slices.Clone(d.list)
	slices.SortStableFunc(list, func(a, b diag) int {
		return cmp.Or(cmp.Compare(a.pos.Filename, b.pos.Filename), cmp.Compare(a.pos.Line, b.pos.Line), cmp.Compare(a.msg, b.msg))
	})
	lines := make([]string, 0, len(list))
	for _, e := range slices.CompactFunc(list, func(a, b diag) bool {
		return a.pos.Filename == b.pos.Filename && a.pos.Line == b.pos.Line && a.msg == b.msg
	}) {
		lines = append(lines, d.where(e.pos)+e.msg)
	}
	return &ruleError{lines: lines}
}

// where is pos as "file:line: ", file relative to the directory rlockgen ran
// in when it lies below it; "" for no position.
func (d *diags) where(pos token.Position) string {
	if !pos.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", relPath(d.dir, pos.Filename), pos.Line)
}

// relPath is path relative to dir when it lies below dir, else path.
func relPath(dir, path string) string {
	if dir == "" {
		return path
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(abs, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return path
	}
	return rel
}

// A ruleError is what rlockgen found wrong in the package: one line per
// broken rule.
type ruleError struct {
	lines []string
}

func (e *ruleError) Error() string { return strings.Join(e.lines, "\n") }
