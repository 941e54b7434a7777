package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// as soon as the pipeline of the end comes back, before lockmw sends a
// script the master lacked (NOSCRIPT) again with EVAL — the order a master
// resumed after a pause may run its connections' requests in
// (TestQuorumDefaultOptionsPausedMaster).
type lateAcquire struct {
	run func(args []any) // runs the kept acquisition on the master

	mu     sync.Mutex
	kept   []any
	played bool // the kept acquisition ran
}

var errKeptBack = errors.New("kept back by the test")

// quorumEndMarker is a line of quorumend.lua: an EVAL whose source has it
// runs the end latch's script.
const quorumEndMarker = "local upto = tonumber(ARGV[2])"

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
		return next(ctx, cmd)
	}
}

func (l *lateAcquire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		end := false // the pipeline of the hold's end: it ran the end latch's script
		for _, cmd := range cmds {
			a := cmd.Args()
			end = end || (len(a) > 1 && cmd.Name() == "evalsha" && a[1] == scripts.QuorumEnd.SHA()) ||
				(len(a) > 1 && cmd.Name() == "eval" && strings.Contains(fmt.Sprint(a[1]), quorumEndMarker))
		}
		l.mu.Lock()
		play := end && l.kept != nil && !l.played
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
// A master that lacks the end latch's script (never used there, or flushed
// by a restart) would answer the first request of a hold's end with
// NOSCRIPT, run the release after it (nothing to free yet), and run the
// latch only when it is sent again with EVAL after the reply: so both go
// with EVAL there. A late acquisition that the master runs after the end's
// pipeline comes to nothing.
func TestQuorumEndSplitByNoScript(t *testing.T) {
	t.Parallel()
	srvs, rdbs := quorum(t, 3)
	ctx := testsupport.Ctx(t)
	const name = "q-noscript"
	direct := srvs[2].Client()
	late := &lateAcquire{run: func(args []any) {
		require.NoError(t, redis.NewScript(scripts.QuorumAcquire.Source()).Load(ctx, direct).Err())
		require.NoError(t, direct.Do(ctx, args...).Err(), "the late acquisition") // refused by the latch, or taken
	}}
	rdbs[2].AddHook(late)
	c := newQuorum(t, rdbs)
	m := c.Mutex(name)

	h := locktest.MustLock(t, m, ctx) // won on masters 0 and 1; master 2's request kept back
	require.NoError(t, direct.ScriptFlush(ctx).Err())
	require.NoError(t, redis.NewScript(scripts.Release.Source()).Load(ctx, direct).Err()) // the release is known there, the end's latch script is not
	require.NoError(t, m.Unlock(h))

	testsupport.Eventually(t, 10*time.Second, "the late acquisition ran after the end's pipeline", func() bool {
		late.mu.Lock()
		defer late.mu.Unlock()
		return late.played
	})
	// The latch refuses it, or an end sent again frees it: either way well
	// before its TTL (the default watchdog timeout, 30 s) would.
	testsupport.Eventually(t, 10*time.Second, "nothing kept on master 2", func() bool { return !keyOn(t, srvs[2], name) })
	for i := range 2 {
		assert.False(t, keyOn(t, srvs[i], name), "nothing kept on master %d", i)
	}
	h2, err := c.Mutex(name).TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.NoError(t, c.Mutex(name).Unlock(h2))
}
