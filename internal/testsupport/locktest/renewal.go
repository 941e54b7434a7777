package locktest

import (
	"context"
	"errors"
	"testing"

	"github.com/go-rlock/rlock/lockmw"
)

// FirstRenewal takes holds, try after try, until one lives to see a
// renewal, and returns that renewal with the Locker and the hold, still
// held: the caller releases it.
//
// take is called for try 0, 1, …: it locks (failing the test on an error)
// and returns the Locker and its hold. renewals carries what the test's
// Renewal hook saw. mine says whether r belongs to try's hold, so that a
// renewal of an earlier try's hold is passed over; nil counts every
// renewal as the current hold's. A hold that ends first — a starved
// renewer let the loss timer end it, as designed — is logged, released
// (Unlock must return [lockmw.ErrLockLost]) and followed by another. ctx
// is the hang guard: the test fails when it ends.
func FirstRenewal[R any](t testing.TB, ctx context.Context, renewals <-chan R,
	take func(try int) (lockmw.Locker, context.Context), mine func(try int, r R) bool,
) (R, lockmw.Locker, context.Context) {
	t.Helper()
	for try := 0; ; try++ {
		l, h := take(try)
	wait:
		for {
			select {
			case r := <-renewals:
				if mine == nil || mine(try, r) {
					return r, l, h
				}
			case <-h.Done():
				t.Logf("try %d: the hold of %q ended before a renewal (%v): another", try, l.Name(), context.Cause(h))
				if err := l.Unlock(h); !errors.Is(err, lockmw.ErrLockLost) {
					t.Fatalf("Unlock of the lost hold of %q: %v, want ErrLockLost", l.Name(), err)
				}
				break wait
			case <-ctx.Done():
				t.Fatalf("no renewal in %d tries: %v", try+1, context.Cause(ctx))
			}
		}
	}
}
