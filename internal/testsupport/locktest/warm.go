package locktest

import (
	"context"
	"testing"

	"github.com/go-rlock/rlock/lockmw"
)

// Warm takes and releases one lock of its own on c, so that what a Client
// does once (load its scripts, check that the server takes RESTORE) is done
// before a benchmark's timed part, by one caller: many concurrent first
// callers each run the RESTORE check on one key, and one's DEL can make
// another's TYPE read "none", which turns the fast path off for the
// Client's life.
func Warm(t testing.TB, c *lockmw.Client) {
	t.Helper()
	m := c.Mutex("locktest:warm")
	h, err := m.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(h); err != nil {
		t.Fatal(err)
	}
}
