package testsupport

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Done fails the test unless ctx is done within d. what names the context,
// for the failure message.
func Done(t testing.TB, ctx context.Context, d time.Duration, what string) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
		t.Fatalf("context not done within %v: %s", d, what)
	}
}

// WaitDone waits for ctx to be done and returns ctx.Err(), or returns an
// error if d passes first. It does not touch the test, so a goroutine other
// than the test's (a handler, a locked function) may call it: a context that
// is never cancelled then fails that code instead of hanging the test.
func WaitDone(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("testsupport: context not done within %v", d)
	}
}
