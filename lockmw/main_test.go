package lockmw_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"go.uber.org/goleak"
)

// redisAddr is a redis-server the examples use, started for the test binary.
var redisAddr string

func TestMain(m *testing.M) {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = srv.Addr()
	code := m.Run()
	_ = srv.Close()
	if code == 0 {
		// go-redis retries a failed dial in a goroutine that sleeps a second
		// before it sees its pool closed: not ours, and it ends by itself.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newClient returns a lockmw.Client on srv with its own go-redis client,
// closed at the end of the test.
func newClient(t testing.TB, srv *redistest.Server, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	c := lockmw.New(srv.NewClient(), opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testCtx is a safety net against a hung test, not a time limit: parallel
// subtests may wait their turn long after it was made.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every few milliseconds until it is true or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDone fails the test unless ctx is done within d.
func waitDone(t testing.TB, ctx context.Context, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(d):
		t.Fatalf("context not done within %v: %s", d, what)
	}
}

func mustLock(t testing.TB, m *lockmw.Mutex, ctx context.Context) context.Context {
	t.Helper()
	h, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q): %v", m.Name(), err)
	}
	return h
}
