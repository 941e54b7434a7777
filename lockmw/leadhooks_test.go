package lockmw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// Lead's campaign and term are marked in the hooks' events; locks taken
// with the term's context, the leader's own mutex included, are not.
func TestLeadMarksItsCampaignAndTermOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var rec eventRecorder
	c := locktest.NewOn(t, srv, lockmw.WithHooks(rec.hooks()))
	m := c.Mutex("leader")

	err := lockmw.Lead(ctx, m, func(lead context.Context) error {
		inner := locktest.MustLock(t, c.Mutex("work"), lead)
		require.NoError(t, c.Mutex("work").Unlock(inner))
		again := locktest.MustLock(t, m, lead) // a re-entry of the term's mutex
		return m.Unlock(again)
	})
	require.NoError(t, err)
	plain := locktest.MustLock(t, m, ctx)
	require.NoError(t, m.Unlock(plain))

	assert.Equal(t, []string{
		"acquire-start leader lead=true",
		"hold-start leader lead=true",
		"acquire-end leader lead=true",
		"acquire-start work lead=false",
		"hold-start work lead=false",
		"acquire-end work lead=false",
		"acquire-start leader lead=false", // the re-entry: no hold
		"acquire-end leader lead=false",
		"acquire-start leader lead=false",
		"hold-start leader lead=false",
		"acquire-end leader lead=false",
	}, rec.leads())
}

// Without acquire hooks (HoldStart alone), the term is still marked.
func TestLeadMarksTheTermWithoutAcquireHooks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	leads := make(chan bool, 2)
	c := locktest.NewOn(t, srv, lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			leads <- e.Lead
			return ctx
		},
	}))
	require.NoError(t, lockmw.Lead(ctx, c.Mutex("leader"), func(context.Context) error { return nil }))
	require.NoError(t, lockmw.WithLock(ctx, c.Mutex("leader"), func(context.Context) error { return nil }))
	assert.True(t, testsupport.Recv(t, leads, decPatience, "the term's HoldStart"))
	assert.False(t, testsupport.Recv(t, leads, decPatience, "the plain hold's HoldStart"))
}
