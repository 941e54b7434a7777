package lockmw_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// BenchmarkMultiLockLockUnlock is BenchmarkLockUnlock for a MultiLock of n
// mutexes, uncontended: n acquisitions and n releases, one after another.
func BenchmarkMultiLockLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	c := locktest.NewOn(b, srv)
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			members := make([]lockmw.Locker, n)
			for i := range members {
				members[i] = c.Mutex(fmt.Sprintf("bench-multi-%d", i))
			}
			benchLockUnlock(b, c.MultiLock(members...), context.Background())
		})
	}
}
