package locktest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
)

// New returns lockmw.New(rdb, opts...), closed at the end of the test. rdb
// itself is left open.
func New(t testing.TB, rdb redis.UniversalClient, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	c := lockmw.New(rdb, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// NewOn returns a lockmw.Client on srv, closed at the end of the test, with a
// go-redis client of its own (srv.NewClient, closed with srv). Two clients
// are two owners, like two processes.
func NewOn(t testing.TB, srv *redistest.Server, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	return New(t, srv.NewClient(), opts...)
}

// NewDown returns a lockmw.Client on a Redis that is down for the whole
// test: a loopback address nothing listens on (testsupport.ClosedAddr), so
// every dial is refused. A stopped redistest.Server is not that: another
// test process may start a redis-server on its freed port, and the client
// under test reaches it.
func NewDown(t testing.TB, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testsupport.ClosedAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	return New(t, rdb, opts...)
}
