package asynqmw_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// TestNamespaceUnderAPrefixACLUser: under the minimal ACL user confined to
// its prefix, a namespaced Client's middleware takes its lock and writes and
// reads its dedup mark (a key it writes itself, not through a lock), and
// every key it writes starts with the namespace.
func TestNamespaceUnderAPrefixACLUser(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := redistest.Start(t)
	require.NoError(t, redistest.SetUser(ctx, "app", "pw", redistest.MinimalACL, []string{"~app:*", "&app:*"}, srv))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	c := locktest.New(t, rdb, lockmw.WithNamespace("app:"))
	mw := asynqmw.New(c, asynqmw.WithDedupWindow(time.Minute))

	var runs atomic.Int32
	var inside []string // the keys while the handler holds the lock
	task := asynq.NewTask("email:send", []byte(`{"to":"a@example.com"}`))
	h := func(context.Context, *asynq.Task) error {
		runs.Add(1)
		inside = srv.Client().Keys(ctx, "*").Val()
		return nil
	}
	require.NoError(t, run(ctx, mw, task, h))
	require.NoError(t, run(ctx, mw, task, h), "skipped by the dedup mark, read under the ACL")
	require.EqualValues(t, 1, runs.Load(), "the mark kept the second run from running")

	mark := "app:" + doneKey(task.Type(), task.Payload())
	after := srv.Client().Keys(ctx, "*").Val()
	require.Contains(t, after, mark, "the dedup mark, in the namespace")
	require.NotEmpty(t, inside)
	for _, k := range append(inside, after...) {
		require.True(t, strings.HasPrefix(k, "app:"), "key %q outside the namespace", k)
	}
}
