package lockmw_test

import (
	"sync"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFencingTokens(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ma := a.Mutex("fenced", lockmw.WithFencing())
	mb := b.Mutex("fenced", lockmw.WithFencing())

	h1 := locktest.MustLock(t, ma, ctx)
	t1, ok := ma.Token(h1)
	require.True(t, ok)
	assert.Positive(t, t1)
	inner := locktest.MustLock(t, ma, h1)
	ti, ok := ma.Token(inner)
	require.True(t, ok)
	assert.Equal(t, t1, ti, "a re-entry has its hold's token")
	_, ok = mb.Token(h1)
	assert.False(t, ok, "another client's mutex does not see the hold")
	_, ok = ma.Token(ctx)
	assert.False(t, ok, "no hold, no token")
	_, ok = a.Mutex("fenced").Token(h1)
	assert.False(t, ok, "a mutex made without WithFencing gives no token")
	require.NoError(t, ma.Unlock(inner))

	// Tokens strictly increase across holds, also through hand-offs to waiters.
	var mu sync.Mutex
	tokens := []int64{t1}
	var wg sync.WaitGroup
	for _, m := range []*lockmw.Mutex{ma, mb, mb, ma} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				h, err := m.Lock(ctx)
				if !assert.NoError(t, err) {
					return
				}
				tok, ok := m.Token(h)
				assert.True(t, ok)
				mu.Lock()
				assert.Greater(t, tok, tokens[len(tokens)-1], "tokens strictly increase in hold order")
				tokens = append(tokens, tok)
				mu.Unlock()
				assert.NoError(t, m.Unlock(h))
			}
		}()
	}
	require.NoError(t, ma.Unlock(h1))
	wg.Wait()
	assert.Len(t, tokens, 21)
	last, err := srv.Client().Get(ctx, "redisson_lock_token:{fenced}").Int64()
	require.NoError(t, err)
	assert.Equal(t, tokens[len(tokens)-1], last, "Redisson's token counter")
}
