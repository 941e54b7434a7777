package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run runs rlockgen with the command-line arguments args and returns the
// exit code: 0 when the file was written, 1 when the package breaks a rule
// or cannot be loaded, 2 for bad usage.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlockgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	typeNames := fs.String("type", "", "comma-separated interface names; required")
	output := fs.String("output", "", "the file to write; default <type>_rlock.go in the package's directory, after the first type")
	tags := fs.String("tags", "", "comma-separated build tags to load the package with")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rlockgen -type T[,T...] [-output file] [-tags tags] [dir]")
		fmt.Fprintln(stderr, "Generates NewLockedT, a decorator of interface T whose methods with an //rlock:lock directive run under a distributed lock.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *typeNames == "" || fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	c := config{dir: ".", from: ".", types: splitList(*typeNames), output: *output, tags: splitList(*tags)}
	if fs.NArg() == 1 {
		c.dir = fs.Arg(0)
	}
	path, src, err := generate(c)
	if err == nil {
		err = os.WriteFile(path, src, 0o644)
	}
	if err != nil {
		var re *ruleError
		if !errors.As(err, &re) {
			err = fmt.Errorf("rlockgen: %w", err)
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
