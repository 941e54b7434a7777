package lockmw_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// groupPatience bounds the wait for a renewal: far above the watchdog's
// interval, for a loaded 2-core machine running other tests.
const groupPatience = 30 * time.Second

// holdUntilRenewed locks l, waits for a renewal of it, and unlocks. On a
// loaded machine a renewal may come too late and the hold be lost: its
// events, HoldEnd included, are reported all the same.
func holdUntilRenewed(t *testing.T, rec *eventRecorder, l lockmw.Locker) {
	t.Helper()
	ctx := testsupport.Ctx(t)
	h, err := l.Lock(ctx)
	require.NoError(t, err)
	testsupport.Eventually(t, groupPatience, "a renewal of "+l.Name(), func() bool {
		return len(rec.groups("renewal", l.Name())) > 0
	})
	if err := l.Unlock(h); err != nil {
		require.ErrorIs(t, err, lockmw.ErrLockLost)
	}
}

func TestEveryEventCarriesTheHandlesGroup(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rec := new(eventRecorder)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(rec.hooks()), lockmw.WithWatchdogTimeout(3*time.Second))
	events := []string{"acquire-start", "acquire-end", "hold-start", "hold-end", "renewal"}

	for _, tc := range []struct {
		what  string
		l     lockmw.Locker
		group string
	}{
		{"a mutex with a group", c.Mutex("orders:42", lockmw.WithGroup("orders")), "orders"},
		{"a semaphore with a group", c.Semaphore("export:7", 2, lockmw.WithGroup("export")), "export"},
		{"a mutex without a group", c.Mutex("nightly"), ""},
		{"a semaphore without a group", c.Semaphore("pool", 2), ""},
	} {
		t.Run(tc.what+" reports it in every event", func(t *testing.T) {
			holdUntilRenewed(t, rec, tc.l)
			for _, ev := range events {
				got := rec.groups(ev, tc.l.Name())
				require.NotEmpty(t, got, ev)
				for _, g := range got {
					assert.Equal(t, tc.group, g, ev)
				}
			}
		})
	}
}

func TestTheGroupIsPerHandleNotPerLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	rec := new(eventRecorder)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(rec.hooks()))
	first, second := c.Mutex("shared", lockmw.WithGroup("first")), c.Mutex("shared", lockmw.WithGroup("second"))

	h := locktest.MustLock(t, first, ctx)
	inner := locktest.MustLock(t, second, h) // the same lock: a re-entry
	_, err := c.Mutex("shared").TryLock(ctx, 0, 0)
	require.ErrorIs(t, err, lockmw.ErrNotAcquired, "the same lock from another owner is busy")
	require.NoError(t, second.Unlock(inner))
	require.NoError(t, first.Unlock(h))

	assert.Equal(t, []string{"first", "second", ""}, rec.groups("acquire-start", "shared"), "each acquisition reports its handle's group")
	assert.Equal(t, []string{"first"}, rec.groups("hold-start", "shared"))
	assert.Equal(t, []string{"first"}, rec.groups("hold-end", "shared"), "the hold reports the group of the handle that took it")
	n, err := srv.Client().Exists(ctx, "shared").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "released")
}

func TestSemaphoreOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	c := lockmw.New(rdb)
	defer c.Close()

	t.Run("WithFencing panics in the constructor with one line", func(t *testing.T) {
		assert.PanicsWithValue(t, `lockmw: Semaphore("sem", 3, WithFencing()): a semaphore's permits have no fencing tokens`,
			func() { c.Semaphore("sem", 3, lockmw.WithFencing()) })
	})
	t.Run("a nil option is skipped, as Mutex skips it", func(t *testing.T) {
		assert.NotPanics(t, func() {
			require.NoError(t, c.Semaphore("sem", 3, nil, lockmw.WithGroup("g")).Err())
			require.NoError(t, c.Mutex("m", nil, lockmw.WithGroup("g")).Err())
		})
	})
}
