package lockmw_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdapterInEveryEvent: a handle made WithAdapter names its adapter in
// each event of every kind, and the skips an adapter reports reach every
// combined Skip hook with the lock's info.
func TestAdapterInEveryEvent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var (
		mu       sync.Mutex
		adapters []string
		skips    []lockmw.SkipEvent
	)
	seen := func(info lockmw.LockInfo) {
		mu.Lock()
		defer mu.Unlock()
		adapters = append(adapters, info.Kind+":"+info.Adapter)
	}
	hooks := lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context { seen(e.LockInfo); return nil },
		AcquireEnd:   func(_ context.Context, e lockmw.AcquireEndEvent) { seen(e.LockInfo) },
		HoldStart:    func(ctx context.Context, e lockmw.HoldStartEvent) context.Context { seen(e.LockInfo); return nil },
		HoldEnd:      func(_ context.Context, e lockmw.HoldEndEvent) { seen(e.LockInfo) },
	}
	var second int
	c := locktest.NewOn(t, srv, lockmw.WithHooks(hooks), lockmw.WithHooks(lockmw.Hooks{
		Skip: func(_ context.Context, e lockmw.SkipEvent) { mu.Lock(); skips = append(skips, e); mu.Unlock() },
	}), lockmw.WithHooks(lockmw.Hooks{Skip: func(context.Context, lockmw.SkipEvent) { second++ }}))

	m := c.Mutex("adapted:m", lockmw.WithAdapter(lockmw.AdapterHTTP))
	s := c.Semaphore("adapted:s", 2, lockmw.WithAdapter(lockmw.AdapterAsynq))
	rw := c.RWMutex("adapted:rw", lockmw.WithAdapter(lockmw.AdapterGRPC))
	ml := c.MultiLock(c.Mutex("adapted:a", lockmw.WithAdapter(lockmw.AdapterRiver)), c.Mutex("adapted:b"))
	for _, l := range []lockmw.Locker{m, s, rw, rw.RLocker(), ml} {
		h, err := l.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(h))
	}
	mu.Lock()
	want := map[string]bool{"mutex:http": true, "semaphore:asynq": true, "rwmutex:grpc": true, "multilock:river": true}
	got := map[string]int{}
	for _, a := range adapters {
		got[a]++
		if !want[a] && a != "mutex:river" && a != "mutex:" { // a multi-lock's members report their own
			t.Errorf("an event reports %q", a)
		}
	}
	for a := range want {
		n := 4 // acquire start and end, hold start and end
		if a == "rwmutex:grpc" {
			n = 8 // both sides
		}
		assert.Equal(t, n, got[a], a)
	}
	mu.Unlock()

	dup := errors.New("done already")
	c.ReportSkip(ctx, lockmw.SkipEvent{LockInfo: lockmw.InfoOf(s), Reason: lockmw.SkipDuplicate, Err: dup})
	c.ReportSkip(ctx, lockmw.SkipEvent{LockInfo: lockmw.LockInfo{Adapter: lockmw.AdapterHTTP}, Reason: lockmw.SkipRefused})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, skips, 2)
	assert.Equal(t, lockmw.LockInfo{Name: "adapted:s", Kind: "semaphore", Permits: 2, Adapter: "asynq"}, skips[0].LockInfo)
	assert.ErrorIs(t, skips[0].Err, dup)
	assert.Equal(t, "duplicate", skips[0].Reason.String())
	assert.Equal(t, "refused", skips[1].Reason.String())
	assert.Equal(t, 2, second, "combined Skip hooks both run")
	assert.Equal(t, lockmw.LockInfo{Name: "adapted:rw", Kind: "rwmutex", Mode: "write", Adapter: "grpc"}, lockmw.InfoOf(rw))
}

func TestWithAdapterOutsideTheSetPanics(t *testing.T) {
	assert.PanicsWithValue(t, `lockmw: WithAdapter("cron"): not one of [http grpc connect asynq river gocron]`, func() {
		lockmw.WithAdapter("cron")
	})
}

func TestReportSkipWithoutHooks(t *testing.T) {
	t.Parallel()
	c := locktest.NewOn(t, redistest.Start(t))
	c.ReportSkip(testsupport.Ctx(t), lockmw.SkipEvent{Reason: lockmw.SkipBusy}) // no hook: nothing happens
	for r, s := range map[lockmw.SkipReason]string{lockmw.SkipBusy: "busy", lockmw.SkipFailed: "error", 0: "error"} {
		assert.Equal(t, s, r.String())
	}
}
