// Package testsupport holds the helpers that this module's tests share: a
// context that ends a hung test, polling for a condition, and bounded waits
// on a channel or a context. Every helper fails the test with a message that
// names what was awaited and for how long.
//
// It imports nothing of this module, so that any test may use it, including
// the internal tests of package lockmw (package lockmw, not lockmw_test). The
// helpers that need a lockmw.Client are in [locktest], which only external
// test packages can import.
//
// The waits poll or select on the test's own goroutine rather than use
// testify's require.Eventually: a condition may then call require itself,
// and nothing keeps running after the test failed.
//
// [locktest]: https://pkg.go.dev/github.com/go-rlock/rlock/internal/testsupport/locktest
package testsupport
