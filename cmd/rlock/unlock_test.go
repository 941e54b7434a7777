package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnlockWithYesFreesTheLockForTheWaiter(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			holder, waiter := newClient(t, rdb, lockmw.WithWatchdogTimeout(3*time.Second)), newClient(t, rdb)
			name := unique("unlock:stuck:" + topo.name)
			m := holder.Mutex(name)
			hold, err := m.Lock(testsupport.Ctx(t))
			require.NoError(t, err)
			stuck := holderOf(t, m)
			got := waitLock(t, rdb, waiter.Mutex(name), 1)

			r := run(t, nil, args(topo.flags(), "-json", "unlock", "-y", name)...)
			require.Equal(t, 0, r.code, r.stderr)
			var v struct {
				Unlocked  bool     `json:"unlocked"`
				WasHeldBy []string `json:"was_held_by"`
				Waiters   int      `json:"waiters"`
			}
			decode(t, strings.TrimSpace(r.stdout), &v)
			assert.True(t, v.Unlocked)
			assert.Equal(t, []string{stuck}, v.WasHeldBy)
			assert.Equal(t, 1, v.Waiters)

			h := testsupport.Recv(t, got, 10*time.Second, "the waiter's hold after the force unlock")
			require.NotNil(t, h, "the waiter holds the lock")
			testsupport.Done(t, hold, 20*time.Second, "the old holder learns at its next renewal")
			require.NoError(t, waiter.Mutex(name).Unlock(h))

			free := run(t, nil, args(topo.flags(), "unlock", "-y", name)...)
			assert.Equal(t, 1, free.code, "a free lock is not locked")
			assert.Equal(t, name+": not locked", strings.TrimPrefix(strings.TrimSpace(free.stderr), "rlock: "))
		})
	}
}

func TestUnlockWithoutYesAndWithoutATerminalRefuses(t *testing.T) {
	rdb := redisClient(t, "single node")
	c := newClient(t, rdb)
	name := "unlock:refused"
	m := c.Mutex(name)
	hold, err := m.Lock(testsupport.Ctx(t))
	require.NoError(t, err)

	r := run(t, strings.NewReader("y\n"), args(onSingle(), "unlock", name)...) // a pipe, not a terminal
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "not a terminal")
	assert.Len(t, lines(r.stderr), 1)
	held, err := m.IsHeld(hold)
	require.NoError(t, err)
	assert.True(t, held, "nothing was unlocked")
	require.NoError(t, m.Unlock(hold))
}

func TestUnlockOfASemaphoreIsRefused(t *testing.T) {
	rdb := redisClient(t, "single node")
	c := newClient(t, rdb)
	permit, err := c.Semaphore("unlock:sem", 2).TryLock(testsupport.Ctx(t), 0, 0)
	require.NoError(t, err)
	r := run(t, nil, args(onSingle(), "unlock", "-y", "unlock:sem")...)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "a semaphore")
	require.NoError(t, c.Semaphore("unlock:sem", 2).Unlock(permit))
}
