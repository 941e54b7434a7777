package testsupport

import (
	"testing"
	"time"
)

// pollInterval is how often [Eventually] evaluates its condition.
const pollInterval = 5 * time.Millisecond

// Eventually calls cond every few milliseconds, on the test's goroutine,
// until it returns true, and fails the test if d passes first. what says
// what was expected, for the failure message.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %s", d, what)
		}
		time.Sleep(pollInterval)
	}
}
