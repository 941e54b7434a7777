package locktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A hold that ends before its first renewal (here forced open from outside,
// so the first renewal finds it gone) is released and followed by another;
// FirstRenewal returns the first renewal of a hold that lived to see it,
// and that hold, still held.
func TestFirstRenewalTakesAnotherWhenTheHoldEndsFirst(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 30*time.Second)
	renewed := make(chan string, 10)
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(time.Second), lockmw.WithHooks(lockmw.Hooks{
		Renewal: func(e lockmw.RenewalEvent) {
			for _, l := range e.Locks {
				if l.Outcome == lockmw.RenewalOK {
					select {
					case renewed <- l.Name:
					default:
					}
				}
			}
		},
	}))
	name := func(try int) string { return fmt.Sprintf("first-renewal-%d", try) }
	got, l, h := locktest.FirstRenewal(t, ctx, renewed, func(try int) (lockmw.Locker, context.Context) {
		m := c.Mutex(name(try))
		h := locktest.MustLock(t, m, ctx)
		if try == 0 {
			if ok, err := m.ForceUnlock(ctx); !ok || err != nil {
				t.Fatalf("ForceUnlock: %v, %v", ok, err)
			}
		}
		return m, h
	}, func(try int, n string) bool { return n == name(try) })
	if got == name(0) || got != l.Name() {
		t.Fatalf("renewed %q with the hold of %q: want a later try's, the one returned", got, l.Name())
	}
	if h.Err() != nil {
		t.Fatalf("the hold returned has ended: %v", context.Cause(h))
	}
	if err := l.Unlock(h); err != nil {
		t.Fatal(err)
	}
}
