package scheduler_test

import (
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/scheduler"
)

// A run that another instance holds the lock of reaches gocron's own
// AfterLockError listener with an error that says so and matches ErrBusy,
// and the Client's Skip hooks count it: busy, adapter gocron.
func TestASkippedRunReachesAfterLockErrorAndTheSkipHooks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hooks, events := locktest.Skips()
	c := locktest.NewOn(t, srv, hooks)
	release := locktest.Hold(t, locktest.NewOn(t, srv), "gocron:report", 0)
	defer release()

	lockErrs := make(chan error, 10)
	ran := make(chan struct{}, 10)
	in := newInstance(t, "a", gocron.WithDistributedLocker(scheduler.NewLocker(c)))
	in.add(t, gocron.DurationJob(time.Hour), gocron.NewTask(func() { ran <- struct{}{} }),
		gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartImmediately()),
		gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, name string, err error) {
			lockErrs <- err
		})),
	)

	err := testsupport.Recv(t, lockErrs, 10*time.Second, "AfterLockError's call")
	t.Log(err)
	require.ErrorIs(t, err, scheduler.ErrBusy)
	require.ErrorIs(t, err, lockmw.ErrNotAcquired)
	assert.NotErrorIs(t, err, scheduler.ErrUnavailable)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, "gocron:report", busy.Name)
	assert.Contains(t, err.Error(), `job "report" skipped (busy)`)
	assert.Contains(t, err.Error(), "released when that run ends")
	assert.NotContains(t, err.Error(), "for another", "the watchdog TTL is not when the lock is released")

	ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
	assert.Equal(t, lockmw.SkipBusy, ev.Reason)
	assert.Equal(t, lockmw.AdapterGocron, ev.Adapter)
	assert.Equal(t, "gocron:report", ev.Name)
	assert.ErrorIs(t, ev.Err, scheduler.ErrBusy)
	require.Empty(t, ran, "the run went ahead")
}

func TestLockErrorsAreReportedAsSkips(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	t.Run("a Redis that is down is an error skip", func(t *testing.T) {
		t.Parallel()
		hooks, events := locktest.Skips()
		_, err := scheduler.NewLocker(locktest.NewDown(t, hooks)).Lock(ctx, "down")
		require.ErrorIs(t, err, scheduler.ErrUnavailable)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipFailed, ev.Reason)
		assert.Equal(t, lockmw.AdapterGocron, ev.Adapter)
		assert.Equal(t, "gocron:down", ev.Name)
	})
	t.Run("an empty job name is a refused skip", func(t *testing.T) {
		t.Parallel()
		hooks, events := locktest.Skips()
		_, err := scheduler.NewLocker(locktest.NewDown(t, hooks)).Lock(ctx, "")
		require.ErrorIs(t, err, lockmw.ErrInvalidName)
		ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.LockInfo{Adapter: lockmw.AdapterGocron}, ev.LockInfo)
	})
}

// A standby's IsLeader, which makes gocron skip the run, is a busy skip of
// the leader lock.
func TestAStandbysRunIsABusySkip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	leader := scheduler.NewElector(locktest.NewOn(t, srv), "fleet")
	t.Cleanup(func() { _ = leader.Close() })
	require.NoError(t, leader.IsLeader(ctx))
	hooks, events := locktest.Skips()
	standby := scheduler.NewElector(locktest.NewOn(t, srv, hooks), "fleet")
	t.Cleanup(func() { _ = standby.Close() })

	require.ErrorIs(t, standby.IsLeader(ctx), scheduler.ErrNotLeader)
	ev := testsupport.Recv(t, events, 10*time.Second, "a Skip event")
	assert.Equal(t, lockmw.SkipBusy, ev.Reason)
	assert.Equal(t, lockmw.AdapterGocron, ev.Adapter)
	assert.Equal(t, "gocron:fleet", ev.Name)
}
