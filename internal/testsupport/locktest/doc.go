// Package locktest holds the test helpers that need a lockmw.Client: a
// client closed at clean-up, on a go-redis client or on a redistest server,
// a Lock that must succeed, and what a test does to a lock from outside: hold
// it as another owner would, ask whether it is locked, count its queue.
//
// It is apart from [testsupport] because it imports lockmw: lockmw's internal
// tests (package lockmw) cannot import it, its external tests
// (package lockmw_test) and every other package's tests can. Unlike the
// public lockmw/lockmwtest, which runs an in-process Redis for users' tests,
// it works on the real redis-server processes of internal/redistest. Tests
// that wait for a hold's first renewal take it through FirstRenewal.
//
// [testsupport]: https://pkg.go.dev/github.com/go-rlock/rlock/internal/testsupport
package locktest
