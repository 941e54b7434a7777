package docscheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/docscheck"
)

// root is the repository's root, from this package's directory.
const root = "../.."

var makeWord = regexp.MustCompile(`^([a-z][a-z0-9-]*|[A-Z][A-Z0-9_]*=\S*)$`)

// Every "make TARGET" the README and docs/*.md quote is a target the
// Makefile has: "make -n" (print the recipe, run nothing) accepts it with
// the variables quoted beside it.
func TestQuotedMakeTargetsParse(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	cmds, err := docscheck.Quoted(root, "make")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		args := c.Args[1:]
		if len(args) == 0 {
			continue // "make" alone names the tool, not a target
		}
		for _, a := range args {
			if !makeWord.MatchString(a) {
				t.Errorf("%s: %q is neither a target nor VAR=value", c, a)
			}
		}
		key := strings.Join(args, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		out, err := exec.Command("make", append([]string{"-n", "-C", root}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: make -n %s: %v\n%s", c, key, err, out)
		}
	}
	if len(seen) < 3 {
		t.Fatalf("found %d make commands, want the README's at least: %v", len(seen), cmds)
	}
}

// Every link of the README and docs/*.md to a file of the repository
// reaches it, and a #fragment into a page reaches one of its headings.
func TestLinksResolve(t *testing.T) {
	pages, err := docscheck.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		anchors[page] = docscheck.Anchors(string(b))
		return anchors[page]
	}
	n := 0
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range docscheck.Links(p, string(b)) {
			n++
			target := l.Target
			if target == "" {
				target = p
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s: %v", l, err)
				continue
			}
			if l.Anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[l.Anchor] {
				t.Errorf("%s: %s has no heading #%s", l, target, l.Anchor)
			}
		}
	}
	if n == 0 {
		t.Fatal("no links found")
	}
}

// docs/performance.md is a reference, not a lab notebook (issue 48): at
// most 300 lines; the story of the figures goes to performance-history.md.
func TestPerformancePageIsAReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("docs/performance.md has %d lines, want at most 300: move the history to docs/performance-history.md", n)
	}
}
