package lockmw_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cmdLog records the names of the commands a go-redis client sends, but for
// the set-up of a new connection (HELLO, CLIENT SETINFO, AUTH). A script
// run is logged as "script", whether it took an EVALSHA or, after NOSCRIPT,
// an EVALSHA and an EVAL: which of the two it took depends on whether some
// other client of the server loaded the script first, which a test that
// shares its server with other clients cannot know.
type cmdLog struct {
	mu    sync.Mutex
	names []string
}

func (l *cmdLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.names
	l.names = nil
	return n
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd) // cmd.Err() is set only after the hooks return
		l.add(cmd.Name(), err)
		return err
	}
}

func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			l.add(c.Name(), c.Err())
		}
		return err
	}
}

// add logs the command name once it has its reply, err.
func (l *cmdLog) add(name string, err error) {
	switch name {
	case "hello", "client", "auth":
		return
	case "evalsha":
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return // the EVAL that follows is the same run
		}
		name = "script"
	case "eval":
		name = "script"
	}
	l.mu.Lock()
	l.names = append(l.names, name)
	l.mu.Unlock()
}

func TestUncontendedCost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var log cmdLog
	rdb := srv.NewClient()
	rdb.AddHook(&log)
	c := lockmw.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	m := c.Mutex("cost")
	h := locktest.MustLock(t, m, ctx) // the Client's RESTORE probe, and the scripts loaded
	require.NoError(t, m.Unlock(h))
	log.take()

	h = locktest.MustLock(t, m, ctx)
	assert.Equal(t, []string{"restore"}, log.take(), "an uncontended Lock is one RESTORE")
	require.NoError(t, m.Unlock(h))
	assert.Equal(t, []string{"script"}, log.take(), "an Unlock is one script")
	h, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	in := locktest.MustLock(t, m, h)
	require.NoError(t, m.Unlock(in))
	require.NoError(t, m.Unlock(h))
	log.take()

	// After a restart the server has no scripts: NOSCRIPT is handled.
	require.NoError(t, srv.Restart())
	h, err = m.TryLock(ctx, 0, 0)
	require.NoError(t, err, "NOSCRIPT after a restart")
	require.NoError(t, m.Unlock(h))
}

// TestUncontendedScriptWork counts, with INFO commandstats, the commands
// Redis runs for uncontended lock+unlock pairs: a RESTORE of the lock hash to
// acquire; to release, one EVALSHA of the short release, which runs HGET
// (the count), EXISTS (the queue), PUBSUB NUMSUB (Redisson's waiters), DEL
// and the latch SET; no PUBLISH of "0", for nobody is subscribed.
func TestUncontendedScriptWork(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	m := c.Mutex("work")
	h := locktest.MustLock(t, m, ctx) // loads the scripts
	require.NoError(t, m.Unlock(h))
	require.NoError(t, srv.Client().ConfigResetStat(ctx).Err())

	const pairs = 10
	for range pairs {
		h := locktest.MustLock(t, m, ctx)
		require.NoError(t, m.Unlock(h))
	}
	calls, err := srv.CommandCalls(ctx)
	require.NoError(t, err)
	want := map[string]int{
		"restore": pairs, "evalsha": pairs,
		"hget": pairs, "exists": pairs, "pubsub|numsub": pairs, "del": pairs, "set": pairs,
	}
	delete(calls, "config|resetstat")
	delete(calls, "info")
	assert.Equal(t, want, calls)
}

// TestFastReleasePublishesToListeners: the short release publishes
// Redisson's "0" when the unlock channel has a subscriber (here one that
// looks like an rlock client: it also listens to the roll-call channel, so
// the short release still runs), and only then (TestUncontendedScriptWork).
func TestFastReleasePublishesToListeners(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	m := c.Mutex("heard")
	h := locktest.MustLock(t, m, ctx) // loads the scripts
	require.NoError(t, m.Unlock(h))

	sub := srv.NewClient().Subscribe(ctx, "redisson_lock__channel:{heard}", "rlock_handoff:{heard}")
	t.Cleanup(func() { _ = sub.Close() })
	for range 2 {
		_, err := sub.Receive(ctx) // the confirmations
		require.NoError(t, err)
	}
	require.NoError(t, srv.Client().ConfigResetStat(ctx).Err())
	h = locktest.MustLock(t, m, ctx)
	require.NoError(t, m.Unlock(h))
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "redisson_lock__channel:{heard}", msg.Channel)
	assert.Equal(t, "0", msg.Payload)
	calls, err := srv.CommandCalls(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, calls["evalsha"], "the short release, not release.lua after it")
	assert.Equal(t, 1, calls["publish"])
}
