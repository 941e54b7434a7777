package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// TestLockUnlockAllocations pins the allocations of an uncontended
// Lock+Unlock on the caller's goroutine (issue 32: 29 for a mutex and 54 for
// a permit before it, 16 and 18 after; BenchmarkLockUnlock and its
// siblings show the same). 6 of them are go-redis's: the health check of a
// pooled connection, 3 per round trip, which no option we may pass avoids.
// Each bound is 2 above what was reached, for what the Client's background
// goroutines and timers allocate meanwhile. It is not parallel: allocations
// are counted for the whole process.
func TestLockUnlockAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	srv := redistest.Start(t)
	c := locktest.NewOn(t, srv)
	defaults := locktest.New(t, srv.NewClient(func(o *redis.Options) { o.ContextTimeoutEnabled = false }))
	deadline, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, tc := range []struct {
		what string
		l    lockmw.Locker
		ctx  context.Context
		max  float64
	}{
		{"a mutex", c.Mutex("allocs"), context.Background(), 18},
		{"a mutex, called with a deadline", c.Mutex("allocs-deadline"), deadline, 18},
		{"a mutex on go-redis default options, called with a deadline", defaults.Mutex("allocs-defaults"), deadline, 24},
		{"a permit of a semaphore", c.Semaphore("allocs-sem", 4), context.Background(), 20},
	} {
		t.Run(tc.what, func(t *testing.T) {
			pair := func() {
				h, err := tc.l.Lock(tc.ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.l.Unlock(h); err != nil {
					t.Fatal(err)
				}
			}
			pair() // the Client's RESTORE probe, the scripts loaded
			got := testing.AllocsPerRun(200, pair)
			t.Logf("%.0f allocations per Lock+Unlock", got)
			assert.LessOrEqual(t, got, tc.max)
		})
	}
}
