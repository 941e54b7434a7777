package lockmw_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a Redis 7 cluster (sharded pub/sub) readers and writers of names in
// several slots share, exclude and hand over; the readers' timeout keys
// live in the name's slot, and a name whose timeout keys cannot is refused.
func TestRWMutexCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	clients := []*lockmw.Client{locktest.New(t, cl.NewClient()), locktest.New(t, cl.NewClient())}
	assert.ErrorIs(t, clients[0].RWMutex("a{b").Err(), lockmw.ErrInvalidName, "its keys fall in different slots")
	for _, name := range []string{"rw-cluster-a", "rw-cluster-b", "{tenant-3}:prices"} {
		var o rwOccupancy
		var wg sync.WaitGroup
		for i, c := range append(clients, clients...) {
			wg.Go(func() {
				rw := c.RWMutex(name)
				for k := range 5 {
					if err := rwHold(ctx, rw, &o, (i+k)%3 == 0); err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
				}
			})
		}
		wg.Wait()
		assert.Zero(t, o.violations.Load(), name)
		assert.Equal(t, int64(20), o.reads.Load()+o.writes.Load(), name)
	}
}

// Readers handed the lock get a short claim window (a tenth of the
// watchdog timeout, 600 ms here): the renewer claims it in the background
// (a Renewal event), then renews it as any hold.
func TestRWMutexHandedOverHoldsAreClaimed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	renewals := make(chan lockmw.RenewedLock, 64)
	hooks := lockmw.Hooks{Renewal: func(e lockmw.RenewalEvent) {
		for _, l := range e.Locks {
			select {
			case renewals <- l:
			default:
			}
		}
	}}
	a := locktest.NewOn(t, srv)
	b := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(6*time.Second), lockmw.WithHooks(hooks))
	w, err := a.RWMutex("rw-claim").Lock(ctx)
	require.NoError(t, err)
	type got struct {
		h   context.Context
		err error
	}
	readers := make(chan got, 2)
	for range 2 {
		go func() {
			h, err := b.RWMutex("rw-claim").RLock(ctx)
			readers <- got{h, err}
		}()
	}
	rwWaitQueued(t, srv, "rw-claim", 2)
	require.NoError(t, a.RWMutex("rw-claim").Unlock(w))
	var hs []context.Context
	for range 2 {
		g := <-readers
		require.NoError(t, g.err)
		hs = append(hs, g.h)
	}
	// Claimed, then renewed: 2 × 2 read holds.
	for range 4 {
		select {
		case l := <-renewals:
			require.Equal(t, lockmw.RenewalOK, l.Outcome)
			assert.Equal(t, "read", l.Mode)
		case <-time.After(30 * time.Second):
			t.Fatal("no renewal")
		}
	}
	for _, h := range hs {
		require.NoError(t, context.Cause(h), "the handed-over read hold is intact")
		require.NoError(t, b.RWMutex("rw-claim").RUnlock(h))
	}
	assert.Empty(t, rwHash(t, srv, "rw-claim"))
}

// A read-write lock on a quorum Client checks its name as on one Redis,
// and the name of its longest key, a reader's (MaxNameLen).
func TestRWMutexOnQuorumBadName(t *testing.T) {
	t.Parallel()
	_, rdbs := quorum(t, 3)
	c := newQuorum(t, rdbs)
	require.NoError(t, c.RWMutex("rw-quorum").Err())
	require.ErrorIs(t, c.RWMutex("").Err(), lockmw.ErrInvalidName)
	long := c.RWMutex(strings.Repeat("n", lockmw.MaxNameLen-10))
	require.ErrorIs(t, long.Err(), lockmw.ErrInvalidName, "a reader's lock name would pass MaxNameLen")
	_, err := long.RLock(t.Context())
	assert.ErrorIs(t, err, lockmw.ErrInvalidName)
}
