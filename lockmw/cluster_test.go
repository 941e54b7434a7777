package lockmw_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	const watchdog = 4500 * time.Millisecond // renewed every 1.5 s; a round may be 3 s late
	var renewedMu sync.Mutex
	renewed := map[string]int{} // RenewalOK outcomes per name
	a := locktest.New(t, cl.NewClient(), lockmw.WithWatchdogTimeout(watchdog), lockmw.WithHooks(lockmw.Hooks{
		Renewal: func(e lockmw.RenewalEvent) {
			renewedMu.Lock()
			defer renewedMu.Unlock()
			for _, l := range e.Locks {
				if l.Outcome == lockmw.RenewalOK {
					renewed[l.Name]++
				}
			}
		},
	}))
	b := locktest.New(t, cl.NewClient())

	t.Run("names whose keys cannot share a slot are invalid", func(t *testing.T) {
		for _, name := range []string{"a{}b", "{unclosed", "x{}"} {
			_, err := a.Mutex(name).TryLock(ctx, 0, 0)
			assert.ErrorIs(t, err, lockmw.ErrInvalidName, name)
		}
		h, err := a.Mutex("{tag}:1").TryLock(ctx, 0, 0)
		require.NoError(t, err, "a name with a hash tag")
		require.NoError(t, a.Mutex("{tag}:1").Unlock(h))
	})

	t.Run("locks on names over all slots, held past the watchdog timeout", func(t *testing.T) {
		const n = 30
		holds := make([]context.Context, n)
		for i := range holds {
			holds[i] = locktest.MustLock(t, a.Mutex(fmt.Sprintf("spread-%d", i)), ctx)
		}
		// Past the watchdog timeout: four renewals of every lock (4 x 1.5 s),
		// per slot, per node, counted rather than slept for; with a 2 s
		// watchdog a round over 1.3 s late on a loaded machine lost holds.
		testsupport.Eventually(t, 2*time.Minute, "four renewals of every lock", func() bool {
			renewedMu.Lock()
			defer renewedMu.Unlock()
			for i := range holds {
				if renewed[fmt.Sprintf("spread-%d", i)] < 4 {
					return false
				}
			}
			return true
		})
		for i, h := range holds {
			require.NoError(t, h.Err(), "hold %d renewed on its node", i)
			require.NoError(t, a.Mutex(fmt.Sprintf("spread-%d", i)).Unlock(h))
		}
	})

	t.Run("waiters are woken through sharded pub/sub", func(t *testing.T) {
		var inside, total atomic.Int32
		var wg sync.WaitGroup
		for _, c := range []*lockmw.Client{a, b, a, b} {
			for _, name := range []string{"shard-x", "shard-y", "shard-z"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := c.Mutex(name)
					for range 3 {
						h, err := m.TryLock(ctx, 10*time.Second, 0)
						if !assert.NoError(t, err) {
							return
						}
						if name == "shard-x" {
							assert.Equal(t, int32(1), inside.Add(1))
							time.Sleep(time.Millisecond)
							inside.Add(-1)
						}
						total.Add(1)
						assert.NoError(t, m.Unlock(h))
					}
				}()
			}
		}
		wg.Wait()
		assert.Equal(t, int32(36), total.Load())
	})
}
