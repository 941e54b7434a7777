package lockmw_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
)

// A hand-off published while a Client's subscription is being set up must not
// be missed by a waiter that joins after it is confirmed.
func TestHandoffDuringSubscribe(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	for round := range 10 {
		c1, c2 := lockmw.New(srv.NewClient()), lockmw.New(srv.NewClient())
		var fails atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			c := c1
			if i%2 == 1 {
				c = c2
			}
			wg.Go(func() {
				m := c.Mutex("subscribe-race")
				h, err := m.TryLock(ctx, 3*time.Second, 0)
				if err != nil {
					fails.Add(1)
					return
				}
				time.Sleep(2 * time.Millisecond)
				_ = m.Unlock(h)
			})
		}
		wg.Wait()
		_ = c1.Close()
		_ = c2.Close()
		if n := fails.Load(); n > 0 {
			t.Fatalf("round %d: %d of 16 waiters missed their turn", round, n)
		}
	}
}
