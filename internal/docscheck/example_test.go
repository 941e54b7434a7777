package docscheck_test

import (
	"fmt"

	"github.com/go-rlock/rlock/internal/docscheck"
)

// Scan finds the commands a page quotes, in code blocks and code spans;
// a comment and leading VAR=value words are left out.
func ExampleScan() {
	page := "Run `make demo`, or with a server of your own\n`REDIS_ADDR=host:port make\ndemo`.\n\n```sh\nmake test   # every test\ngo run -C examples/bench . -scenario contended\n```\n"
	for _, c := range docscheck.Scan("README.md", page) {
		fmt.Println(c)
	}
	// Output:
	// README.md:1: make demo
	// README.md:2: make demo
	// README.md:6: make test
	// README.md:7: go run -C examples/bench . -scenario contended
}

// Anchors gives a page's headings as the #fragments GitHub links them by.
func ExampleAnchors() {
	a := docscheck.Anchors("# Performance\n## On a cluster (parallel -cluster)\n## Cost\n## Cost\n")
	fmt.Println(a["performance"], a["on-a-cluster-parallel--cluster"], a["cost"], a["cost-1"])
	// Output: true true true true
}
