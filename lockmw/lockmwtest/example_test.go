package lockmwtest_test

import (
	"context"
	"testing"

	"github.com/go-rlock/rlock/lockmw/lockmwtest"
)

// A unit test of code that takes a lock, with no Redis server.
func ExampleNew() {
	testInvoice := func(t *testing.T) {
		locks := lockmwtest.New(t) // closed at the end of the test
		m := locks.Mutex("invoice:7")
		hold, err := m.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Unlock(hold)
		// ... the code under test, given hold ...
	}
	_ = testInvoice
}
