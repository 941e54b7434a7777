package asynqmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

var errInjected = errors.New("injected fault")

// faultHook fails the next few dedup-mark SETs or lock releases (the 7-key
// scripts) that go through the client it is added to.
type faultHook struct {
	marks, releases atomic.Int32
}

func (h *faultHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *faultHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *faultHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		var n *atomic.Int32
		switch cmd.Name() {
		case "set":
			if strings.HasPrefix(fmt.Sprint(args[1]), asynqmw.DefaultKeyPrefix+"done:") {
				n = &h.marks
			}
		case "evalsha", "eval":
			// lockmw's releases: the short one (5 keys) and release.lua (7).
			if k := fmt.Sprint(args[2]); k == "5" || k == "7" {
				n = &h.releases
			}
		}
		if n != nil && n.Add(-1) >= 0 {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

// After the handler succeeded, a failure of the middleware's own bookkeeping
// is reported, but the task is not run again.
func TestBookkeepingFailures(t *testing.T) {
	t.Parallel()
	srv := newEnv(t).srv
	rdb := srv.NewClient()
	hook := &faultHook{}
	rdb.AddHook(hook)
	c := locktest.New(t, rdb)
	mw := asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute))
	ok := func(context.Context, *asynq.Task) error { return nil }
	locked := func(task *asynq.Task) bool {
		l, err := c.Mutex(lockName(task.Type(), task.Payload())).IsLocked(t.Context())
		require.NoError(t, err)
		return l
	}

	t.Run("a dedup mark that cannot be written revokes the task", func(t *testing.T) {
		task := asynq.NewTask("t", []byte("mark"))
		hook.marks.Store(1)
		err := run(t.Context(), mw, task, ok)
		require.ErrorIs(t, err, errInjected)
		require.ErrorIs(t, err, asynq.RevokeTask)
		require.ErrorContains(t, err, "succeeded, but writing dedup mark")
		require.False(t, locked(task))
	})
	t.Run("a failed unlock revokes the task and is retried in the background", func(t *testing.T) {
		task := asynq.NewTask("t", []byte("unlock"))
		hook.releases.Store(2) // the unlock and its first retry
		err := run(t.Context(), mw, task, ok)
		require.ErrorIs(t, err, errInjected)
		require.ErrorIs(t, err, asynq.RevokeTask)
		require.ErrorContains(t, err, "succeeded, but unlocking")
		require.True(t, locked(task))
		deadline := time.Now().Add(waitLimit)
		for locked(task) {
			require.True(t, time.Now().Before(deadline), "the lock was never released")
			time.Sleep(10 * time.Millisecond)
		}
		require.EqualValues(t, -1, hook.releases.Load(), "the unlock was not retried after a failed retry")
	})
	t.Run("a failed handler whose unlock fails reports both", func(t *testing.T) {
		task := asynq.NewTask("t", []byte("both"))
		hook.releases.Store(1)
		boom := errors.New("boom")
		err := run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { return boom })
		require.ErrorIs(t, err, boom)
		require.ErrorIs(t, err, errInjected)
		require.NotErrorIs(t, err, asynq.RevokeTask)
		deadline := time.Now().Add(waitLimit)
		for locked(task) {
			require.True(t, time.Now().Before(deadline), "the lock was never released")
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// An unlock that fails because Redis went down is retried in the background,
// and closing the lockmw.Client ends the retrying: otherwise TestMain's leak
// check finds the goroutine (ten tries take about half a minute).
func TestUnlockRetryEndsWithTheClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mw := asynqmw.New(e.c)
	task := asynq.NewTask("t", []byte("redis-down"))
	err := run(t.Context(), mw, task, func(context.Context, *asynq.Task) error { return e.srv.Stop() })
	require.ErrorContains(t, err, "succeeded, but unlocking")
	require.NoError(t, e.c.Close())
}
