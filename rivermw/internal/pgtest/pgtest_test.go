package pgtest_test

import (
	"testing"

	"github.com/go-rlock/rlock/rivermw/internal/pgtest"
)

func TestSmoke(t *testing.T) {
	s := pgtest.Start(t)
	p := s.RiverDB(t)
	var n int
	if err := p.QueryRow(t.Context(), "select count(*) from river_job").Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Log(n, s.URL("x"))
}
