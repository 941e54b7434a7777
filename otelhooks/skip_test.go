package otelhooks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

var (
	skipReasons = []string{"busy", "duplicate", "refused", "error"}
	adapters    = []string{lockmw.AdapterHTTP, lockmw.AdapterGRPC, lockmw.AdapterConnect, lockmw.AdapterAsynq, lockmw.AdapterRiver, lockmw.AdapterGocron}
)

// Skips of many locks, for every reason (and one out of range) and every
// adapter, are counted under closed sets of reason and
// lock.adapter and under the locks' groups, never their names.
func TestTheSkipMetricsAttributesAreBounded(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	h := tel.hooks()
	ctx := t.Context()
	const perGroup = 500
	reasons := []lockmw.SkipReason{lockmw.SkipBusy, lockmw.SkipDuplicate, lockmw.SkipRefused, lockmw.SkipFailed, lockmw.SkipReason(99)}
	total := 0
	for _, a := range adapters {
		for i := range perGroup {
			for _, r := range reasons {
				info := lockmw.LockInfo{Name: fmt.Sprintf("%s:order:%d", a, i), Group: a + ":order", Kind: "mutex", Adapter: a}
				h.Skip(ctx, lockmw.SkipEvent{LockInfo: info, Reason: r})
				total++
			}
		}
		h.Skip(ctx, lockmw.SkipEvent{LockInfo: lockmw.LockInfo{Adapter: a}, Reason: lockmw.SkipRefused}) // no lock: a misplaced mounting
		total++
	}

	sets := tel.attrSets(t, otelhooks.SkipsMetric)
	// Per adapter: its group by 4 reasons, and the refusal that names no lock.
	require.Len(t, sets, len(adapters)*(len(skipReasons)+1))
	for _, set := range sets {
		reason, ok := set.Value(otelhooks.LockSkipReasonKey)
		require.True(t, ok, "a data point without reason: %v", set)
		assert.Contains(t, skipReasons, reason.AsString())
		adapter, ok := set.Value(otelhooks.LockAdapterKey)
		require.True(t, ok, "a data point without lock.adapter: %v", set)
		assert.Contains(t, adapters, adapter.AsString())
		if name, ok := set.Value(otelhooks.LockNameKey); ok {
			assert.Equal(t, adapter.AsString()+":order", name.AsString(), "lock.name is the group")
		} else {
			assert.Equal(t, 2, set.Len(), "a skip that names no lock has its reason and adapter alone: %v", set)
		}
	}
	assert.EqualValues(t, total, tel.sum(t, otelhooks.SkipsMetric))
	assert.EqualValues(t, 2*perGroup*len(adapters), tel.sum(t, otelhooks.SkipsMetric, otelhooks.LockSkipReasonKey.String("error")), "out of range counts as error")
}

// A skip adds a lock.skip event, with the full lock name, to the caller's
// span.
func TestASkipIsAnEventOfTheCallersSpan(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	ctx, span := tel.request(t.Context(), "task")
	info := lockmw.LockInfo{Name: "asynq:lock:t:abc", Group: "asynq:lock:t", Kind: "mutex", Adapter: lockmw.AdapterAsynq}
	tel.hooks().Skip(ctx, lockmw.SkipEvent{LockInfo: info, Reason: lockmw.SkipDuplicate})
	span.End()
	s := tel.only(t, "task")
	require.Len(t, s.Events(), 1)
	ev := s.Events()[0]
	assert.Equal(t, otelhooks.SkipEventName, ev.Name)
	assert.Contains(t, ev.Attributes, otelhooks.LockSkipReasonKey.String("duplicate"))
	assert.Contains(t, ev.Attributes, otelhooks.LockNameKey.String("asynq:lock:t:abc"))
	assert.Contains(t, ev.Attributes, otelhooks.LockAdapterKey.String("asynq"))
}

// Under a real asynq server, the duplicates asynqmw skips are counted in
// lock.skips (reason duplicate, lock.adapter asynq, the task type's group),
// and the lock's spans and metrics carry lock.adapter.
func TestAsynqSkipsAreCounted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	rdb := srv.NewClient()
	c := locktest.New(t, rdb, lockmw.WithHooks(tel.hooks()))
	results := make(chan error, 10)
	h := asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute))(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))
	s := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              1,
		TaskCheckInterval:        20 * time.Millisecond,
		DelayedTaskCheckInterval: 20 * time.Millisecond,
		ShutdownTimeout:          2 * time.Second,
		Logger:                   nopLogger{},
	})
	require.NoError(t, s.Start(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		err := h.ProcessTask(ctx, task)
		results <- err
		return err
	})))
	t.Cleanup(s.Shutdown)

	enqueuer := asynq.NewClientFromRedisClient(rdb)
	task := asynq.NewTask("email:send", []byte(`{"to":"a@example.com"}`))
	const duplicates = 3
	for range 1 + duplicates {
		_, err := enqueuer.Enqueue(task)
		require.NoError(t, err)
		require.NoError(t, testsupport.Recv(t, results, patience, "a task's result"))
	}

	group := otelhooks.LockNameKey.String("asynq:lock:email:send")
	asynqAdapter := otelhooks.LockAdapterKey.String(lockmw.AdapterAsynq)
	assert.EqualValues(t, duplicates, tel.sum(t, otelhooks.SkipsMetric, otelhooks.LockSkipReasonKey.String("duplicate"), asynqAdapter, group))
	assert.EqualValues(t, duplicates, tel.sum(t, otelhooks.SkipsMetric))
	assert.EqualValues(t, 1+duplicates, tel.histCount(t, otelhooks.HoldDurationMetric, asynqAdapter, group), "every hold, the duplicates' too")
	for _, name := range []string{otelhooks.WaitSpanName, otelhooks.HoldSpanName} {
		spans := tel.ended(name)
		require.Len(t, spans, 1+duplicates, name)
		for _, sp := range spans {
			assert.Equal(t, "asynq", attr(t, sp, otelhooks.LockAdapterKey).AsString(), name)
		}
	}
}

type nopLogger struct{}

func (nopLogger) Debug(...any) {}
func (nopLogger) Info(...any)  {}
func (nopLogger) Warn(...any)  {}
func (nopLogger) Error(...any) {}
func (nopLogger) Fatal(...any) {}
