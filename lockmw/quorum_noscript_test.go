package lockmw_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateAcquire is a go-redis hook on one master's client that plays a master
// that runs a hold's acquisition late, between the requests of its end: it
// keeps the first quorum acquisition back (the quorum counts it as failed,
// so the hold's end raises the end latch there), and runs it on the master
// as soon as a pipeline of the end comes back with a script the master did
// not have (NOSCRIPT), before go-redis's caller sends that script again
// with EVAL — the order a master resumed after a pause may run its
// connections' requests in (TestQuorumDefaultOptionsPausedMaster).
type lateAcquire struct {
	run func(args []any) // runs the kept acquisition on the master

	mu     sync.Mutex
	kept   []any
	played bool // the kept acquisition ran
	redone bool // and then a script was sent again with EVAL
}

var errKeptBack = errors.New("kept back by the test")

func (l *lateAcquire) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lateAcquire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		l.mu.Lock()
		keep := l.kept == nil && len(args) > 1 && cmd.Name() == "evalsha" && args[1] == scripts.QuorumAcquire.SHA()
		if keep {
			l.kept = args
		}
		l.mu.Unlock()
		if keep {
			cmd.SetErr(errKeptBack)
			return errKeptBack
		}
		err := next(ctx, cmd)
		l.mu.Lock()
		l.redone = l.redone || (l.played && cmd.Name() == "eval")
		l.mu.Unlock()
		return err
	}
}

func (l *lateAcquire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		noScript := false
		for _, cmd := range cmds {
			noScript = noScript || scripts.IsNoScript(cmd.Err())
		}
		l.mu.Lock()
		play := noScript && l.kept != nil && !l.played
		l.played = l.played || play
		kept := l.kept
		l.mu.Unlock()
		if play {
			l.run(kept)
		}
		return err
	}
}

// The hold's end on master 2 is a straggler: Unlock returns once masters 0
// and 1 answered, and the test waits for master 2's requests.
//
// A master that lacks the end's script (never used there, or flushed by a
// restart) answers the first request of a hold's end with NOSCRIPT; the
// requests after it in the pipeline have run, and the one that failed runs
// again with EVAL only after the reply. A late acquisition that the master
// runs in between must still be undone: the end frees the lock whichever of
// its requests runs after the acquisition.
func TestQuorumEndSplitByNoScript(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 3)
	ctx := testsupport.Ctx(t)
	const name = "q-noscript"
	direct := srvs[2].Client()
	late := &lateAcquire{run: func(args []any) {
		require.NoError(t, redis.NewScript(scripts.QuorumAcquire.Source()).Load(ctx, direct).Err())
		require.NoError(t, direct.Do(ctx, args...).Err(), "the late acquisition")
		require.True(t, keyOn(t, srvs[2], name), "the late acquisition took the lock")
	}}
	rdbs[2].AddHook(late)
	c := newQuorum(t, rdbs)
	m := c.Mutex(name)

	h := locktest.MustLock(t, m, ctx) // won on masters 0 and 1; master 2's request kept back
	require.NoError(t, direct.ScriptFlush(ctx).Err())
	require.NoError(t, redis.NewScript(scripts.Release.Source()).Load(ctx, direct).Err()) // the release is known there, the end's latch script is not
	require.NoError(t, m.Unlock(h))

	testsupport.Eventually(t, 10*time.Second, "the late acquisition ran between the end's requests", func() bool {
		late.mu.Lock()
		defer late.mu.Unlock()
		return late.redone
	})
	for i := range srvs {
		assert.False(t, keyOn(t, srvs[i], name), "nothing kept on master %d", i)
	}
	h2, err := c.Mutex(name).TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.NoError(t, c.Mutex(name).Unlock(h2))
}
