package lockmw_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileRef is a Go or Lua file name as docs/architecture.md writes it: bare
// (a file of lockmw, or of lockmw/internal/scripts for Lua), with a
// directory, or a glob (quorum*.go).
var fileRef = regexp.MustCompile(`[\w./*-]+\.(?:go|lua)\b`)

// TestArchitectureMapNamesFilesThatExist: every file docs/architecture.md
// names exists (a glob matches one at least), so the map cannot drift from
// the code it maps.
func TestArchitectureMapNamesFilesThatExist(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	require.NoError(t, err)
	refs := map[string]bool{}
	for _, ref := range fileRef.FindAllString(string(doc), -1) {
		refs[ref] = true
	}
	require.NotEmpty(t, refs)
	for ref := range refs {
		var where []string
		switch {
		case strings.Contains(ref, "/"):
			where = []string{ref, filepath.Join("..", ref)} // below lockmw, or from the root
		case strings.HasSuffix(ref, ".lua"):
			where = []string{filepath.Join("internal", "scripts", ref)}
		default:
			where = []string{ref}
		}
		found := false
		for _, w := range where {
			m, err := filepath.Glob(w)
			require.NoError(t, err, ref)
			found = found || len(m) > 0
		}
		assert.True(t, found, "docs/architecture.md names %s, which does not exist (looked for %v)", ref, where)
	}
}

// TestLowerLayersImportNothingAbove: the packages below lockmw never import
// it (the compiler refuses the cycle only for those lockmw imports) nor, for
// the root's internal packages lockmw uses, anything of lockmw. The seam
// (lockmw/backend) imports nothing of the module, and its back-ends only the
// seam: never lockmw, its scripts or its internals. (backendtest, the
// conformance suite, runs lockmw on a back-end: it is above them.)
func TestLowerLayersImportNothingAbove(t *testing.T) {
	t.Parallel()
	const mod = "github.com/go-rlock/rlock/"
	ofModule := func(p string) bool { return strings.HasPrefix(p, mod) }
	lower := map[string]func(path string) bool{
		"internal": func(p string) bool { return p == mod+"lockmw" },
		filepath.Join("..", "internal", "keyslot"): func(p string) bool { return strings.HasPrefix(p, mod+"lockmw") },
		filepath.Join("..", "internal", "layout"):  func(p string) bool { return strings.HasPrefix(p, mod+"lockmw") },
		filepath.Join("backend", "goredis"):        func(p string) bool { return ofModule(p) && p != mod+"lockmw/backend" },
	}
	seam, err := filepath.Glob(filepath.Join("backend", "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, seam)
	for _, f := range seam {
		lower[f] = ofModule
	}
	for root, above := range lower {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				assert.False(t, above(p), "%s imports %s, a layer above it", path, p)
			}
			return nil
		})
		require.NoError(t, err)
	}
}
