package testsupport

import (
	"testing"
	"time"
)

// Recv returns the next value from ch, or the zero value once ch is closed,
// and fails the test if neither happens within d. what names the awaited
// value, for the failure message.
func Recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("nothing received within %v: %s", d, what)
		panic("unreachable") // Fatalf does not return
	}
}
