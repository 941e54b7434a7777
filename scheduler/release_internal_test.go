package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/require"
)

// A release that failed is retried in the background while Redis is down,
// and the retrying stops when the lockmw.Client closes: nothing outlives the
// Client.
func TestRetriedReleaseStopsAtClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := lockmw.New(srv.NewClient())
	m := c.Mutex("retry-until-close")
	hold, err := m.Lock(context.Background())
	require.NoError(t, err)
	require.NoError(t, srv.Stop())

	ended := make(chan struct{})
	require.Error(t, release(m, hold, time.Time{}, func() { close(ended) }, c.Done()), "Redis is down")
	select {
	case <-ended:
		t.Fatal("the failed release is not retried")
	case <-time.After(3 * retry.First):
	}
	require.NoError(t, c.Close())
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the release is still retried after the Client closed")
	}
}
