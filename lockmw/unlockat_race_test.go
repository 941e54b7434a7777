package lockmw_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldRenewal holds back the watchdog's renewal script of one lock (an
// EVALSHA or EVAL of one key, the lock's) until it is let go, so that it
// reaches the server after whatever runs meanwhile.
type heldRenewal struct {
	name    string
	armed   atomic.Bool
	caught  chan struct{} // a renewal is held
	letGo   chan struct{}
	release atomic.Bool // a release script of the lock completed while the renewal was held
}

func (h *heldRenewal) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *heldRenewal) isRenewal(cmd redis.Cmder) bool {
	a := cmd.Args()
	return len(a) >= 4 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") && fmt.Sprint(a[2]) == "1" && fmt.Sprint(a[3]) == h.name
}

func (h *heldRenewal) hold(cmds []redis.Cmder) {
	if slices.ContainsFunc(cmds, h.isRenewal) && h.armed.CompareAndSwap(true, false) {
		close(h.caught)
		<-h.letGo
	}
}

func (h *heldRenewal) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.hold([]redis.Cmder{cmd})
		err := next(ctx, cmd)
		if a := cmd.Args(); len(a) > 3 && fmt.Sprint(a[2]) != "1" && fmt.Sprint(a[3]) == h.name && !h.armed.Load() {
			h.release.Store(true)
		}
		return err
	}
}

func (h *heldRenewal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.hold(cmds)
		return next(ctx, cmds)
	}
}

// TestUnlockAtAfterARenewalInFlight: a renewal already sent when UnlockAt
// runs must not land after it, or the key gets the watchdog timeout back
// and the lock is given up late (found under load: TestUnlockAt saw the
// key's TTL at the full watchdog timeout just after UnlockAt returned).
func TestUnlockAtAfterARenewalInFlight(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const name = "unlock-at-race"
	hook := &heldRenewal{name: name, caught: make(chan struct{}), letGo: make(chan struct{})}
	rdb := srv.NewClient()
	rdb.AddHook(hook)
	c := locktest.New(t, rdb, lockmw.WithWatchdogTimeout(3*time.Second))
	m := c.Mutex(name)
	h := locktest.MustLock(t, m, ctx)
	hook.armed.Store(true)
	testsupport.Recv(t, hook.caught, 10*time.Second, "a renewal sent")

	at := time.Now().Add(time.Second)
	done := make(chan error, 1)
	var took atomic.Int64 // UnlockAt's duration: its PEXPIRE counts from when the server runs it
	go func() {
		start := time.Now()
		err := m.UnlockAt(h, at)
		took.Store(int64(time.Since(start)))
		done <- err
	}()
	// Let the renewal go once the release ran (without the fix), or once
	// UnlockAt has waited a while for it (with it: UnlockAt waits for the
	// renewal's answer, so the release cannot have run).
	for until := time.Now().Add(200 * time.Millisecond); !hook.release.Load() && time.Now().Before(until); {
		time.Sleep(time.Millisecond) // a poll: the release's hook, or UnlockAt waiting a while
	}
	close(hook.letGo)
	require.NoError(t, testsupport.Recv(t, done, 10*time.Second, "UnlockAt"))
	left := time.Until(at) // before the read: its reply's trip would shrink it
	ttl, err := srv.Client().PTTL(ctx, name).Result()
	require.NoError(t, err)
	// PEXPIRE counts from when the server runs it, within UnlockAt's call,
	// and at is rounded to whole milliseconds: at most that much over at,
	// never the watchdog timeout (3s) a late renewal gives back.
	assert.LessOrEqual(t, ttl, left+time.Duration(took.Load())+2*time.Millisecond, "the key expires at at, not a watchdog timeout later (a release ran before the held renewal: %v)", hook.release.Load())
}
