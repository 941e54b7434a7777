// Package locktest holds the test helpers that need a lockmw.Client: a
// client closed at clean-up, on a go-redis client or on a redistest server,
// and a Lock that must succeed.
//
// It is apart from [testsupport] because it imports lockmw: lockmw's internal
// tests (package lockmw) cannot import it, its external tests
// (package lockmw_test) and every other package's tests can. Unlike the
// public lockmw/lockmwtest, which runs an in-process Redis for users' tests,
// it works on the real redis-server processes of internal/redistest.
//
// [testsupport]: https://pkg.go.dev/github.com/go-rlock/rlock/internal/testsupport
package locktest
