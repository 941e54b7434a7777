package asynqmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/require"
)

// A failed unlock is retried in the background while Redis is down, and the
// retrying stops when the lockmw.Client closes: nothing outlives the Client.
func TestRetriedUnlockStopsAtClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := lockmw.New(srv.NewClient())
	m := c.Mutex("retry-until-close")
	hctx, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	require.Error(t, m.Unlock(hctx), "Redis is down")

	ended := make(chan struct{})
	go func() {
		retryUnlock(m, hctx, c.Done())
		close(ended)
	}()
	select {
	case <-ended:
		t.Fatal("the failed unlock is not retried")
	case <-time.After(3 * unlockFirstDelay):
	}
	require.NoError(t, c.Close())
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the unlock is still retried after the Client closed")
	}
}
