package locktest

import (
	"context"
	"testing"

	"github.com/go-rlock/rlock/lockmw"
)

// MustLock locks m and returns the hold context, failing the test if Lock
// returns an error.
func MustLock(t testing.TB, m *lockmw.Mutex, ctx context.Context) context.Context {
	t.Helper()
	h, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q): %v", m.Name(), err)
	}
	return h
}
