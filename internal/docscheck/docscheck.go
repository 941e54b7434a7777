package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A Command is a command line quoted by a page, in a code block or a code
// span: its words, with a trailing "# comment" and leading VAR=value
// assignments left out.
type Command struct {
	File string // the page, relative to the repository's root
	Line int    // where the quote starts, from 1
	Args []string
}

func (c Command) String() string {
	return fmt.Sprintf("%s:%d: %s", c.File, c.Line, strings.Join(c.Args, " "))
}

// Pages are the pages whose quotes are checked: README.md and docs/*.md,
// relative to root.
func Pages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages, nil
}

// Quoted returns every command the pages under root quote whose first
// word is one of names (for example "make", "go").
func Quoted(root string, names ...string) ([]Command, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var out []Command
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		for _, c := range Scan(p, string(b)) {
			if slices.Contains(names, c.Args[0]) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// Scan returns the command lines page quotes: each line of a fenced code
// block, and each code span of the prose (a span may cross a line break).
func Scan(page, text string) []Command {
	var out []Command
	add := func(line int, quote string) {
		if args := words(quote); len(args) > 0 {
			out = append(out, Command{File: page, Line: line, Args: args})
		}
	}
	lines := strings.Split(text, "\n")
	var prose []string // the current run of prose lines
	proseStart := 0
	flush := func() {
		for _, s := range spans(prose) {
			add(proseStart+s.line, s.text)
		}
		prose = prose[:0]
	}
	inFence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if !inFence {
				flush()
			}
			inFence = !inFence
			continue
		}
		if inFence {
			add(i+1, strings.TrimPrefix(strings.TrimSpace(l), "$ "))
			continue
		}
		if len(prose) == 0 {
			proseStart = i + 1
		}
		prose = append(prose, l)
	}
	flush()
	return out
}

type span struct {
	line int // from 0, in the run of lines
	text string
}

// spans finds the code spans of a run of prose lines.
func spans(lines []string) []span {
	var out []span
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		for {
			open := strings.IndexByte(l, '`')
			if open < 0 {
				break
			}
			rest, text, line := l[open+1:], "", i
			closeAt := strings.IndexByte(rest, '`')
			for closeAt < 0 && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				text += rest + " "
				i++
				rest = lines[i]
				closeAt = strings.IndexByte(rest, '`')
			}
			if closeAt < 0 {
				break
			}
			out = append(out, span{line: line, text: text + rest[:closeAt]})
			l = rest[closeAt+1:]
		}
	}
	return out
}

var assignment = regexp.MustCompile(`^[A-Z][A-Z0-9_]*=`)

// words splits a command line: leading VAR=value words and a "# comment"
// are left out.
func words(line string) []string {
	fs := strings.Fields(line)
	for len(fs) > 0 && assignment.MatchString(fs[0]) {
		fs = fs[1:]
	}
	if i := slices.Index(fs, "#"); i >= 0 {
		fs = fs[:i]
	}
	return fs
}

// A Link is a link of a page to a file of the repository, and maybe to one
// of its headings.
type Link struct {
	File   string // the page, relative to the root
	Line   int
	Target string // the file linked to, relative to the root ("" for the page itself)
	Anchor string // the #fragment, "" if none
}

func (l Link) String() string {
	return fmt.Sprintf("%s:%d: %s#%s", l.File, l.Line, l.Target, l.Anchor)
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Links returns the links of page (relative to root, text its contents)
// that stay in the repository: not http(s), not mailto.
func Links(page, text string) []Link {
	var out []Link
	inFence := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			ref := m[1]
			if strings.Contains(ref, "://") || strings.HasPrefix(ref, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(ref, "#")
			if target != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(page), target))
			}
			out = append(out, Link{File: page, Line: i + 1, Target: target, Anchor: anchor})
		}
	}
	return out
}

// Anchors returns the #fragments of a Markdown page's headings as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens, a
// repeated heading's with -1, -2.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		a := slug(h)
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", slug(h), n)
		}
		out[a] = true
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
