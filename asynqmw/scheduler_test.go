package asynqmw_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// enqueues records when the schedulers enqueued the periodic task.
type enqueues struct {
	mu sync.Mutex
	by []int // the instance that enqueued, in order
}

// add returns a PostEnqueueFunc that records an enqueue by instance i.
func (e *enqueues) add(i int) func(*asynq.TaskInfo, error) {
	return func(_ *asynq.TaskInfo, err error) {
		if err == nil {
			e.mu.Lock()
			e.by = append(e.by, i)
			e.mu.Unlock()
		}
	}
}

func (e *enqueues) snapshot() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.by...)
}

// Three instances run RunScheduler with the same "@every 1s" task: only the
// leader enqueues, and when it stops another takes over and the enqueues go
// on, all of them by that one. (Which instance enqueued is recorded, not the
// times: a tick that a loaded machine runs late is no second leader.)
func TestRunSchedulerOneLeader(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var rec enqueues
	newScheduler := func(i int) func() *asynq.Scheduler {
		return func() *asynq.Scheduler {
			s := asynq.NewScheduler(asynq.RedisClientOpt{Addr: srv.Addr()}, &asynq.SchedulerOpts{
				PostEnqueueFunc: rec.add(i),
				LogLevel:        asynq.ErrorLevel,
			})
			_, err := s.Register("@every 1s", asynq.NewTask("tick", nil))
			require.NoError(t, err)
			return s
		}
	}
	type instance struct {
		c      *lockmw.Client
		cancel context.CancelCauseFunc
		done   chan error
	}
	var instances []instance
	for i := range 3 {
		ctx, cancel := context.WithCancelCause(testsupport.Ctx(t))
		in := instance{c: locktest.NewOn(t, srv), cancel: cancel, done: make(chan error, 1)}
		go func() { in.done <- asynqmw.RunScheduler(ctx, in.c.Mutex("asynq:scheduler"), newScheduler(i)) }()
		instances = append(instances, in)
	}
	testsupport.Eventually(t, 20*time.Second, "three enqueues", func() bool { return len(rec.snapshot()) >= 3 })

	// The leader stops; a standby takes over.
	h, ok, err := instances[0].c.Mutex("asynq:scheduler").Holder(testsupport.Ctx(t))
	require.NoError(t, err)
	require.True(t, ok, "someone leads")
	stopped := errors.New("leader stopped")
	leader := -1
	for i, in := range instances {
		if len(h.Field) > len(in.c.ID()) && h.Field[:len(in.c.ID())+1] == in.c.ID()+":" {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0, "the leader is one of the three")
	instances[leader].cancel(stopped)
	assert.ErrorIs(t, testsupport.Recv(t, instances[leader].done, 10*time.Second, "the leader's RunScheduler"), stopped)
	// The leader's enqueues come first; then those of one other instance.
	// (Counted from the record, not from when the leader stopped: a standby
	// may enqueue before this goroutine runs again.)
	theLeaders := func(by []int) int {
		n := 0
		for n < len(by) && by[n] == leader {
			n++
		}
		return n
	}
	testsupport.Eventually(t, 20*time.Second, "the enqueues go on under the next leader", func() bool {
		by := rec.snapshot()
		return len(by)-theLeaders(by) >= 3
	})
	for i, in := range instances {
		if i != leader {
			in.cancel(stopped)
			assert.ErrorIs(t, testsupport.Recv(t, in.done, 10*time.Second, "RunScheduler"), stopped)
		}
	}
	by := rec.snapshot()
	before := theLeaders(by)
	for i := before; i < len(by); i++ {
		assert.NotEqual(t, leader, by[i], "enqueue %d of %v: by the leader after another had enqueued", i, by)
		assert.Equal(t, by[before], by[i], "enqueue %d of %v: two instances enqueued after the leader stopped", i, by)
	}
	t.Logf("%d enqueues, the leader stopped after %d of them", len(by), before)
}

// A nil scheduler ends the term and is returned; so is a nil newScheduler.
func TestRunSchedulerBadScheduler(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	err := asynqmw.RunScheduler(ctx, c.Mutex("asynq:nil-scheduler"), func() *asynq.Scheduler { return nil })
	assert.ErrorContains(t, err, "returned nil")
	assert.ErrorIs(t, asynqmw.RunScheduler(ctx, c.Mutex("x"), nil), lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, asynqmw.RunScheduler(ctx, nil, func() *asynq.Scheduler { return nil }), lockmw.ErrInvalidArgument)
	locked, err := c.Mutex("asynq:nil-scheduler").IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the term ended: released")
}
