package rivermw_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestASnoozeIsReportedAsABusySkip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hooks, events := locktest.Skips()
	ran := make(chan int64, 10)
	c := e.start(t, node{locks: locktest.NewOn(t, e.redis, hooks), opts: byArgsKey(), work: func(_ context.Context, job *river.Job[jobArgs]) error {
		ran <- job.ID
		return nil
	}})
	m := locktest.NewOn(t, e.redis).Mutex(heldLock)
	hold := locktest.MustLock(t, m, t.Context())
	job := insert(t, c, jobArgs{Key: "held"}, "")

	e.next(t, "a snooze", snoozed(job.ID))
	ev := testsupport.Recv(t, events, waitLimit, "a Skip event")
	assert.Equal(t, lockmw.SkipBusy, ev.Reason)
	assert.Equal(t, lockmw.AdapterRiver, ev.Adapter)
	assert.Equal(t, heldLock, ev.Name)
	assert.ErrorIs(t, ev.Err, lockmw.ErrNotAcquired)

	require.NoError(t, m.Unlock(hold))
	require.Equal(t, job.ID, testsupport.Recv(t, ran, waitLimit, "the job runs once the key is free"))
}
