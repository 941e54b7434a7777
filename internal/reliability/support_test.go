package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuardedWriteRejectsOlderTokens(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	rdb := srv.Client()
	for _, step := range []struct {
		token int64
		value string
		taken bool
	}{
		{3, "a", true},
		{3, "b", true}, // the same holder writes again
		{5, "c", true},
		{4, "stale", false},
		{1, "older", false},
		{6, "d", true},
	} {
		ok, err := reliability.GuardedWrite(ctx, rdb, "resource", step.token, step.value)
		require.NoError(t, err)
		assert.Equal(t, step.taken, ok, "token %d", step.token)
	}
	v, err := rdb.HGet(ctx, "resource", "value").Result()
	require.NoError(t, err)
	assert.Equal(t, "d", v)
}

func TestSendHookRecordsScriptsOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	rdb := srv.NewClient()
	rdb.AddHook(reliability.SendHook{})
	c := lockmw.New(rdb, lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			return reliability.WithToken(ctx, e.Token)
		},
	}))
	defer c.Close()

	sctx, st := reliability.WithSendTimes(ctx)
	assert.True(t, st.Last().IsZero())
	require.NoError(t, rdb.Ping(sctx).Err())
	assert.True(t, st.Last().IsZero(), "a PING is not a script")

	before := time.Now()
	m := c.Mutex("send-times", lockmw.WithFencing())
	h, err := m.Lock(sctx)
	require.NoError(t, err)
	after := time.Now()
	last := st.Last()
	assert.False(t, last.Before(before) || last.After(after), "the acquire was sent during Lock")
	tok, _ := m.Token(h)
	assert.Equal(t, tok, reliability.TokenOf(h), "HoldStart's context is the hold context's parent")
	assert.Zero(t, reliability.TokenOf(ctx))

	_, err = rdb.Pipelined(sctx, func(p redis.Pipeliner) error {
		p.Eval(sctx, "return 1", nil)
		return nil
	})
	require.NoError(t, err)
	assert.True(t, st.Last().After(last), "a pipeline with a script")
	require.NoError(t, m.Unlock(h))
}
