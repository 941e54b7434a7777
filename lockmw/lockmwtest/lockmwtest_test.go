package lockmwtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/lockmwtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContention(t *testing.T) {
	srv := lockmwtest.NewServer(t)
	renewed := make(chan struct{}, 16)
	hooks := lockmw.Hooks{Renewal: func(lockmw.RenewalEvent) {
		select {
		case renewed <- struct{}{}:
		default:
		}
	}}
	a := lockmwtest.NewOn(t, srv, lockmw.WithWatchdogTimeout(1500*time.Millisecond), lockmw.WithHooks(hooks))
	b := lockmwtest.NewOn(t, srv)
	ctx := context.Background()
	h, err := a.Mutex("job").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Mutex("job").TryLock(ctx, 0, 0); !errors.Is(err, lockmw.ErrNotAcquired) {
		t.Fatalf("TryLock on a held lock: %v, want ErrNotAcquired", err)
	}
	for range 2 { // renewed by the watchdog, past its first interval and then some
		select {
		case <-renewed:
		case <-time.After(10 * time.Second):
			t.Fatal("no renewal")
		}
	}
	if err := h.Err(); err != nil {
		t.Fatalf("hold ended: %v", context.Cause(h))
	}
	got := make(chan error, 1)
	go func() {
		hb, err := b.Mutex("job").Lock(ctx)
		if err == nil {
			err = b.Mutex("job").Unlock(hb)
		}
		got <- err
	}()
	if err := a.Mutex("job").Unlock(h); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
}

func TestLeaseExpires(t *testing.T) {
	c := lockmwtest.New(t)
	m := c.Mutex("leased")
	h, err := m.TryLock(context.Background(), 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	deadline := time.Now().Add(2 * time.Second)
	for {
		locked, err := m.IsLocked(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !locked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease did not expire with the wall clock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
