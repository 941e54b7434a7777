// Package docscheck finds what the README and docs/*.md quote — the
// commands in their code spans and code blocks, the links between them —
// so that tests can check that each still works: that every quoted
// "make TARGET" is a target of the Makefile (this package's test runs
// "make -n" for each), that every quoted load-tool command parses
// (examples/bench's test, in its own module), and that every link between
// the pages reaches a file and, with a #fragment, one of its headings.
//
// It reads text only: what a quoted command does is the tests' to check.
package docscheck
