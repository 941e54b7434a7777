package lockmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// minimal is a back-end that writes only what every back-end must (Process,
// Pipeline, Info) and leaves every capability to backend.Defaults: the
// engine must run on it, and refuse loudly what needs a capability.
type minimal struct {
	backend.Defaults
	b backend.Backend
}

func (m minimal) Process(ctx context.Context, cmd *backend.Cmd) error { return m.b.Process(ctx, cmd) }
func (m minimal) Pipeline(ctx context.Context, cmds []*backend.Cmd) error {
	return m.b.Pipeline(ctx, cmds)
}
func (m minimal) Info() backend.Info { return m.b.Info() }

// TestNewFromBackend: a Client on a back-end of the seam locks as New's
// does; one with only the required methods takes free locks, refuses a
// Lock that must wait (no pub/sub) with errors.ErrUnsupported and panics on
// WithReplicaSync (no PipelineOn); Redis is nil for a back-end that is not
// go-redis's.
func TestNewFromBackend(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	full := lockmw.NewFromBackend(goredis.New(rdb))
	defer full.Close()
	assert.Same(t, rdb, full.Redis(), "the go-redis back-end's client")
	m := full.Mutex("from-backend")
	hold, err := m.Lock(ctx)
	require.NoError(t, err)

	bare := lockmw.NewFromBackend(minimal{b: goredis.New(rdb)})
	defer bare.Close()
	assert.Nil(t, bare.Redis(), "no go-redis client behind a back-end of another kind")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = bare.Mutex("from-backend").Lock(wctx)
	cancel()
	assert.ErrorIs(t, err, errors.ErrUnsupported, "a waiter without pub/sub is refused, not left polling in silence")
	require.NoError(t, m.Unlock(hold))
	// The refused waiter's queue entry is left in the background (it may be
	// handed the lock meanwhile, and passes it on): the name is free soon.
	again, err := m.TryLock(ctx, 20*time.Second, 0)
	require.NoError(t, err, "the refused waiter kept nothing")
	require.NoError(t, m.Unlock(again))

	free := bare.Mutex("from-backend-free")
	h, err := free.TryLock(ctx, 0, 0)
	require.NoError(t, err, "a free lock needs no capability")
	require.NoError(t, free.Unlock(h))

	assert.PanicsWithValue(t, "lockmw: WithReplicaSync: the back-end does not offer PipelineOn, which WAIT needs", func() {
		lockmw.NewFromBackend(minimal{b: goredis.New(rdb)}, lockmw.WithReplicaSync(1, time.Second))
	})
	assert.PanicsWithValue(t, "lockmw: NewFromBackend(nil): a back-end is required", func() { lockmw.NewFromBackend(nil) })
}

// TestNewQuorumOf: a quorum over back-ends owns its locks with one client
// ID on every master; a cluster's back-end or a nil one panics.
func TestNewQuorumOf(t *testing.T) {
	t.Parallel()
	ctx := testsupport.Ctx(t)
	var masters []backend.Backend
	var servers []*redistest.Server
	for range 3 {
		srv := redistest.Start(t)
		servers = append(servers, srv)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		masters = append(masters, goredis.New(rdb))
	}
	c := lockmw.NewQuorumOf(masters)
	defer c.Close()
	m := c.Mutex("quorum-of")
	hold, err := m.Lock(ctx)
	require.NoError(t, err)
	// Lock returns once a majority holds it: the third master's attempt may
	// still be on its way (a make stress run found master 0 empty). Every
	// master that holds it holds it under the Client's one ID.
	holding := 0
	for i, srv := range servers {
		fields, err := srv.Client().HKeys(ctx, "quorum-of").Result()
		require.NoError(t, err)
		owned := false
		for _, f := range fields {
			if strings.HasPrefix(f, "rlock:") {
				continue // the lock's own bookkeeping fields
			}
			assert.True(t, strings.HasPrefix(f, c.ID()+":"), "master %d: field %q is not under the Client's ID %s", i, f, c.ID())
			owned = true
		}
		if owned {
			holding++
		}
	}
	assert.GreaterOrEqual(t, holding, 2, "a majority of the 3 masters holds the lock")
	require.NoError(t, m.Unlock(hold))

	cl := redistest.StartCluster(t, 3, 0)
	assert.PanicsWithValue(t, "lockmw: NewQuorumOf: back-end 1 is a cluster back-end; a quorum needs independent masters", func() {
		lockmw.NewQuorumOf([]backend.Backend{masters[0], goredis.New(cl.Client())})
	})
	assert.PanicsWithValue(t, "lockmw: NewQuorumOf: back-end 0 is nil", func() { lockmw.NewQuorumOf([]backend.Backend{nil}) })
	assert.PanicsWithValue(t, "lockmw: NewQuorumOf: at least one back-end is required", func() { lockmw.NewQuorumOf(nil) })
}
