package lockmw

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A service that starts with many callers at once keeps the fast path: their
// first calls do not probe RESTORE side by side (concurrent probes of the
// Client's key read each other's DEL and turned it off for the Client's life).
// Through a proxy that forwards each command after 500 µs, as a network
// does: a pipeline's commands then reach the server apart.
func TestConcurrentFirstCallsKeepTheFastPath(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	p.SetRequestLatency(500 * time.Microsecond)
	p.SetLatency(500 * time.Microsecond)
	ctx := context.Background()
	for round := range 5 {
		c := New(redis.NewClient(&redis.Options{Addr: p.Addr()}))
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			wg.Go(func() {
				<-start
				m := c.Mutex(fmt.Sprintf("probe-%d-%d", round, i))
				hctx, err := m.Lock(ctx)
				if err == nil {
					err = m.Unlock(hctx)
				}
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		assert.False(t, c.fastOff.Load(), "round %d: the fast path was turned off", round)
		assert.True(t, c.fastChecked.Load(), "round %d: RESTORE was checked", round)
		require.NoError(t, c.Close())
		require.NoError(t, c.Redis().Close())
	}
}
