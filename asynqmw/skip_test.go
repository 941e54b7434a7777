package asynqmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// skipped is one call of WithOnSkip's function.
type skipped struct {
	typ    string
	reason error
}

// skipEnv is an env whose Client reports its Skip hook's events on events.
func skipEnv(t *testing.T) (*env, <-chan lockmw.SkipEvent) {
	hooks, events := locktest.Skips()
	return newEnv(t, hooks), events
}

// onSkip is a WithOnSkip that reports its calls on ch.
func onSkip(ch chan<- skipped) asynqmw.Option {
	return asynqmw.WithOnSkip(func(_ context.Context, t *asynq.Task, reason error) { ch <- skipped{t.Type(), reason} })
}

func TestServerSkipsCounted(t *testing.T) {
	t.Parallel()

	t.Run("a duplicate is skipped with ErrDuplicate, returns nil and is counted as duplicate", func(t *testing.T) {
		t.Parallel()
		e, events := skipEnv(t)
		skips := make(chan skipped, 100)
		results := make(chan result, 100)
		ran := make(chan struct{}, 10)
		startServer(t, e.rdb, 2, record(results)(asynqmw.New(e.c, asynqmw.WithDedupWindow(time.Minute), onSkip(skips))(
			asynq.HandlerFunc(func(context.Context, *asynq.Task) error { ran <- struct{}{}; return nil }))))

		task := asynq.NewTask("email:send", []byte("once"))
		enqueue(t, e.rdb, task)
		require.NoError(t, testsupport.Recv(t, results, waitLimit, "the first run's result").err)
		testsupport.Recv(t, ran, waitLimit, "the first run")
		for i := range 2 {
			enqueue(t, e.rdb, task)
			require.NoError(t, testsupport.Recv(t, results, waitLimit, "a duplicate's result").err, "duplicate %d", i)
			s := testsupport.Recv(t, skips, waitLimit, "WithOnSkip's call")
			require.Equal(t, "email:send", s.typ)
			require.ErrorIs(t, s.reason, asynqmw.ErrDuplicate)
			assert.NotErrorIs(t, s.reason, asynqmw.ErrBusy)
			assert.Contains(t, s.reason.Error(), doneKey(task.Type(), task.Payload()))

			ev := testsupport.Recv(t, events, waitLimit, "a Skip event")
			assert.Equal(t, lockmw.SkipDuplicate, ev.Reason)
			assert.Equal(t, "duplicate", ev.Reason.String())
			assert.Equal(t, lockmw.AdapterAsynq, ev.Adapter)
			assert.Equal(t, lockName(task.Type(), task.Payload()), ev.Name)
			assert.Equal(t, "asynq:lock:email:send", ev.Group)
			assert.Equal(t, "mutex", ev.Kind)
			assert.ErrorIs(t, ev.Err, asynqmw.ErrDuplicate)
		}
		require.Empty(t, ran, "a duplicate ran")
		require.Empty(t, skips)
		require.Empty(t, events)
	})

	for _, policy := range []asynqmw.BusyPolicy{asynqmw.Retry, asynqmw.Skip} {
		t.Run("a busy task is skipped with ErrBusy and counted as busy under "+policy.String(), func(t *testing.T) {
			t.Parallel()
			e, events := skipEnv(t)
			skips := make(chan skipped, 100)
			results := make(chan result, 100)
			startServer(t, e.rdb, 1, record(results)(asynqmw.New(e.c, asynqmw.WithOnBusy(policy), onSkip(skips))(
				asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))))

			task := asynq.NewTask("report:build", []byte("busy"))
			name := lockName(task.Type(), task.Payload())
			other := e.other(t)
			hctx, err := other.Mutex(name).Lock(t.Context())
			require.NoError(t, err)
			enqueue(t, e.rdb, task, asynq.MaxRetry(5))

			r := testsupport.Recv(t, results, waitLimit, "a busy attempt's result")
			if policy == asynqmw.Skip {
				require.NoError(t, r.err)
			} else {
				require.True(t, asynqmw.IsBusy(r.err), "%v", r.err)
			}
			s := testsupport.Recv(t, skips, waitLimit, "WithOnSkip's call")
			require.ErrorIs(t, s.reason, asynqmw.ErrBusy)
			require.ErrorIs(t, s.reason, lockmw.ErrNotAcquired)
			assert.NotErrorIs(t, s.reason, asynqmw.ErrDuplicate)
			ev := testsupport.Recv(t, events, waitLimit, "a Skip event")
			assert.Equal(t, lockmw.SkipBusy, ev.Reason)
			assert.Equal(t, lockmw.AdapterAsynq, ev.Adapter)
			assert.Equal(t, name, ev.Name)
			assert.ErrorIs(t, ev.Err, asynqmw.ErrBusy)
			require.NoError(t, other.Mutex(name).Unlock(hctx))
		})
	}

	t.Run("an invalid key is counted as refused, and is no skip of WithOnSkip's", func(t *testing.T) {
		t.Parallel()
		e, events := skipEnv(t)
		skips := make(chan skipped, 100)
		results := make(chan result, 100)
		badKey := asynqmw.WithKey(func(context.Context, *asynq.Task) string { return "bad\x00key" })
		startServer(t, e.rdb, 1, record(results)(asynqmw.New(e.c, badKey, onSkip(skips))(
			asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))))

		enqueue(t, e.rdb, asynq.NewTask("t", nil))
		require.ErrorIs(t, testsupport.Recv(t, results, waitLimit, "the attempt's result").err, lockmw.ErrInvalidName)
		ev := testsupport.Recv(t, events, waitLimit, "a Skip event")
		assert.Equal(t, lockmw.SkipRefused, ev.Reason)
		assert.Equal(t, lockmw.AdapterAsynq, ev.Adapter)
		assert.ErrorIs(t, ev.Err, lockmw.ErrInvalidName)
		require.Empty(t, skips)
	})
}
