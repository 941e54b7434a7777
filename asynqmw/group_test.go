package asynqmw_test

import (
	"context"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
)

// Every lock's group (lockmw.WithGroup) is its name with the task type in
// place of the key: a bounded label for metrics.
func TestTheGroupIsTheTaskType(t *testing.T) {
	t.Parallel()
	type names struct{ name, group string }
	seen := make(chan names, 1)
	e := newEnv(t, lockmw.WithHooks(lockmw.Hooks{
		AcquireStart: func(ctx context.Context, ev lockmw.AcquireStartEvent) context.Context {
			seen <- names{ev.Name, ev.Group}
			return ctx
		},
	}))
	task := asynq.NewTask("email:send", []byte(`{"to":"a@example.com"}`))
	byTenant := func(context.Context, *asynq.Task) string { return "tenant:7" }
	for _, tc := range []struct {
		what string
		opts []asynqmw.Option
		want names
	}{
		{"the default key", nil, names{"asynq:lock:" + asynqmw.DefaultKey(t.Context(), task), "asynq:lock:email:send"}},
		{"a limit", []asynqmw.Option{asynqmw.WithPermits(2)}, names{"asynq:limit:" + asynqmw.DefaultKey(t.Context(), task), "asynq:limit:email:send"}},
		{"a key function of the user's and a prefix", []asynqmw.Option{asynqmw.WithKey(byTenant), asynqmw.WithKeyPrefix("jobs:")}, names{"jobs:lock:tenant:7", "jobs:lock:email:send"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			err := run(t.Context(), asynqmw.New(e.c, tc.opts...), task, func(context.Context, *asynq.Task) error { return nil })
			require.NoError(t, err)
			assert.Equal(t, tc.want, testsupport.Recv(t, seen, waitLimit, "an AcquireStart event"))
		})
	}
}
