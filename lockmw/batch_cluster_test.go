package lockmw_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterPipelines records what a ClusterClient's own hooks see: every
// pipeline, with the masters its commands' first keys map to, and every
// lock command (RESTORE or a script run), alone or in a pipeline.
type clusterPipelines struct {
	cc *redis.ClusterClient

	mu        sync.Mutex
	pipelines int
	largest   int // commands of the largest pipeline
	mixed     int // pipelines whose commands went to more than one master
	lockCmds  atomic.Int64
}

func (p *clusterPipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *clusterPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		p.count(cmd)
		return next(ctx, cmd)
	}
}

func (p *clusterPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		masters := map[string]bool{}
		for _, c := range cmds {
			p.count(c)
			if key := lockKeyOf(c); key != "" {
				if node, err := p.cc.MasterForKey(ctx, key); err == nil {
					masters[node.Options().Addr] = true
				}
			}
		}
		p.mu.Lock()
		p.pipelines++
		p.largest = max(p.largest, len(cmds))
		if len(masters) > 1 {
			p.mixed++
		}
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

// count counts c when it is a lock command.
func (p *clusterPipelines) count(c redis.Cmder) {
	if lockKeyOf(c) != "" {
		p.lockCmds.Add(1)
	}
}

// lockKeyOf is the first key of a RESTORE or a script run, "" for any other
// command.
func lockKeyOf(c redis.Cmder) string {
	args := c.Args()
	switch strings.ToLower(c.Name()) {
	case "restore":
		return fmt.Sprint(args[1])
	case "evalsha", "eval":
		if len(args) > 3 && fmt.Sprint(args[2]) != "0" {
			return fmt.Sprint(args[3])
		}
	}
	return ""
}

// TestClusterBatchesPerMaster: on a cluster, the overlapping calls of one
// Client share pipelines, each pipeline carrying the calls of one master
// only, and the hooks the user added to the ClusterClient see every lock
// command, in pipelines or alone.
func TestClusterBatchesPerMaster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 0)
	ctx := testsupport.Ctx(t)
	cc := cl.NewClient()
	rec := &clusterPipelines{cc: cc}
	cc.AddHook(rec)
	c := locktest.New(t, cc)

	var locks atomic.Int64
	round := func(r int) {
		var wg sync.WaitGroup
		for g := range 24 {
			wg.Go(func() {
				m := c.Mutex(fmt.Sprintf("lane-%d-%d", r, g))
				for range 10 {
					h, err := m.Lock(ctx)
					if !assert.NoError(t, err) {
						return
					}
					locks.Add(1)
					assert.NoError(t, m.Unlock(h))
				}
			})
		}
		wg.Wait()
	}
	// Rounds until pipelines carried several calls: the calls that overlap
	// on a loaded machine are not known in advance.
	deadline := time.Now().Add(time.Minute)
	for r := 0; ; r++ {
		round(r)
		rec.mu.Lock()
		largest := rec.largest
		rec.mu.Unlock()
		if largest >= 2 || time.Now().After(deadline) {
			break
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.GreaterOrEqual(t, rec.largest, 2, "some pipeline carried several calls")
	assert.Zero(t, rec.mixed, "a pipeline carries one master's calls only (of %d pipelines)", rec.pipelines)
	assert.GreaterOrEqual(t, rec.lockCmds.Load(), locks.Load(), "the ClusterClient's hooks see at least one lock command per Lock")
}

// TestClusterBatchedAcrossMigrationAndFailover: calls batched per master
// while a slot migrates and a master is killed (its replica promoted) keep
// the lock's guarantee: two Clients taking the same names never hold one
// at once, every call returns, and once the faults are over every name can
// be locked again.
func TestClusterBatchedAcrossMigrationAndFailover(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	ctx := testsupport.Ctx(t)
	const watchdog = 3 * time.Second // what a lost reply leaves expires soon
	clients := []*lockmw.Client{
		locktest.New(t, cl.NewClient(), lockmw.WithWatchdogTimeout(watchdog)),
		locktest.New(t, cl.NewClient(), lockmw.WithWatchdogTimeout(watchdog)),
	}
	const names = 12
	inside := make([]atomic.Int32, names)
	var overlaps, holds, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		for i := range names {
			wg.Go(func() {
				m := c.Mutex(fmt.Sprintf("moving-%d", i))
				for {
					select {
					case <-stop:
						return
					default:
					}
					lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					h, err := m.Lock(lctx)
					cancel()
					if err != nil {
						failures.Add(1)
						continue
					}
					if inside[i].Add(1) != 1 {
						overlaps.Add(1)
					}
					holds.Add(1)
					inside[i].Add(-1)
					_ = m.Unlock(h) // may fail during the fail-over: the lock then expires
				}
			})
		}
	}
	// Faults while the calls go on: a slot migrates, then its new master dies.
	atLeast := func(n int64) {
		start := holds.Load()
		testsupport.Eventually(t, 30*time.Second, "holds go on", func() bool { return holds.Load() >= start+n })
	}
	atLeast(50)
	moveSlotAway(t, ctx, cl, "moving-0")
	atLeast(50)
	victim, err := cl.MasterFor(ctx, "moving-0")
	require.NoError(t, err)
	_, err = cl.KillMaster(ctx, victim)
	require.NoError(t, err)
	atLeast(50)
	close(stop)
	wg.Wait()
	assert.Zero(t, overlaps.Load(), "no name held by two callers at once (%d holds, %d failed calls)", holds.Load(), failures.Load())
	// Whatever a lost reply left behind expires: every name is free again.
	probe := locktest.New(t, cl.NewClient())
	for i := range names {
		m := probe.Mutex(fmt.Sprintf("moving-%d", i))
		h, err := m.Lock(testsupport.CtxFor(t, 3*watchdog))
		require.NoError(t, err, "name %d can be locked again", i)
		require.NoError(t, m.Unlock(h))
	}
}
