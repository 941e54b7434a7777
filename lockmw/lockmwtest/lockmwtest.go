package lockmwtest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// New returns a lockmw.Client on a fresh in-process Redis of its own. The
// client, its go-redis client and the server are closed at the end of the
// test. Each call starts another server: clients that must contend with each
// other come from NewOn with one Server.
func New(t testing.TB, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	return NewOn(t, NewServer(t), opts...)
}

// Server is an in-process Redis shared by several clients.
type Server struct {
	mr *miniredis.Miniredis
}

// NewServer starts an in-process Redis, closed at the end of the test.
func NewServer(t testing.TB) *Server {
	t.Helper()
	mr := miniredis.NewMiniRedis()
	mr.ClockTTL(true) // TTLs count down with the wall clock
	if err := mr.Start(); err != nil {
		t.Fatalf("lockmwtest: starting the in-process Redis: %v", err)
	}
	t.Cleanup(mr.Close)
	return &Server{mr: mr}
}

// Addr returns the server's address, for go-redis clients of your own.
func (s *Server) Addr() string { return s.mr.Addr() }

// NewOn returns a lockmw.Client on s, with a go-redis client of its own; both
// are closed at the end of the test. Two clients are two owners, like two
// processes.
func NewOn(t testing.TB, s *Server, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.mr.Addr()})
	c := lockmw.New(rdb, opts...)
	t.Cleanup(func() {
		_ = c.Close()
		_ = rdb.Close()
	})
	return c
}
