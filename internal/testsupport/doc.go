// Package testsupport holds the helpers that this module's tests share: a
// context that ends a hung test, polling for a condition, and bounded waits
// on a channel or a context. Every helper fails the test with a message that
// names what was awaited and for how long. [Peak] counts how many handlers
// run at once.
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
// # A test that passes every time
//
// The suite runs with -race on a 2-core machine that also runs other test
// binaries, so each test follows three rules (make stress N=10 checks them):
//
//   - Assert only on what the test's own client did. Another client of the
//     same server (a waiter, a holder, a Redisson stand-in) may load a
//     script, queue or retry at any moment, so a command log counts a script
//     run once whether it took EVALSHA or NOSCRIPT and EVAL, and INFO
//     commandstats is exact only on a server no other client uses.
//   - Count process-wide things (runtime.NumGoroutine, the heap) only in a
//     test that is not parallel: top-level tests that do not call
//     t.Parallel run alone, before the parallel ones.
//   - Judge a duration against the times the test observed, not against a
//     budget: a lease deadline lies between the call's start and its return
//     plus the lease; a TTL between what was set before the read and what
//     remains after it. Where an upper bound is the point (a call returns at
//     its context's deadline), put it where the wrong behaviour would land
//     (the client's read timeout, the next renewal), not a little past the
//     right one. Lower bounds (waited at least the wait) are always safe.
//     A hold whose renewals a starved machine could not run in time is
//     lost, as designed: a test that needs a renewed hold takes another
//     when one ends first (locktest.FirstRenewal) rather than fail or hang.
//
// [locktest]: https://pkg.go.dev/github.com/go-rlock/rlock/internal/testsupport/locktest
package testsupport
