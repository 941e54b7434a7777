package lockmw_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/require"
)

// A restarted process that keeps its client ID must not find the request
// latches of its previous life.
func TestSameClientIDAgain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	for run := 1; run <= 2; run++ {
		c := lockmw.New(srv.NewClient(), lockmw.WithClientID("app"))
		m := c.Mutex("job")
		h := locktest.MustLock(t, m, ctx)
		require.NoError(t, m.Unlock(h))
		locked, err := m.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked, "run %d: released", run)
		require.NoError(t, c.Close())
	}
}

func TestNoKeysLeftBehind(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	h := locktest.MustLock(t, a.Mutex("tidy"), ctx)
	got := lockAsync(ctx, b.Mutex("tidy"))
	testsupport.Eventually(t, 5*time.Second, "queued", func() bool {
		n, _ := srv.Client().ZCard(ctx, "rlock_queue:{tidy}").Result()
		return n == 1
	})
	require.NoError(t, a.Mutex("tidy").Unlock(h))
	require.NoError(t, <-got)
	keys, err := srv.Client().Keys(ctx, "*tidy*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		require.True(t, strings.HasPrefix(k, "redisson_unlock_latch:"), "no lock, queue or waiter table left: %s", k)
		ttl, err := srv.Client().PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, time.Duration(0), "request latches are short-lived")
	}
}
