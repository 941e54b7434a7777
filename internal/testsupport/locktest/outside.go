package locktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/lockmw"
)

// Hold takes the mutex name on c as some other owner would, with lease (0:
// the watchdog), until release or the end of the test.
func Hold(t testing.TB, c *lockmw.Client, name string, lease time.Duration) (release func()) {
	t.Helper()
	mu := c.Mutex(name)
	hctx, err := mu.TryLock(context.Background(), 0, lease)
	if err != nil {
		t.Fatalf("TryLock(%q): %v", name, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = mu.Unlock(hctx) }) }
	t.Cleanup(release)
	return release
}

// IsLocked reports whether anyone holds the mutex name.
func IsLocked(t testing.TB, c *lockmw.Client, name string) bool {
	t.Helper()
	locked, err := c.Mutex(name).IsLocked(context.Background())
	if err != nil {
		t.Fatalf("IsLocked(%q): %v", name, err)
	}
	return locked
}

// Queued is the number of waiters in the queue of the lock or semaphore
// name (layout's Queue key, a sorted set).
func Queued(t testing.TB, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), layout.Mutex(name).Queue).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", layout.Mutex(name).Queue, err)
	}
	return n
}
