package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// running is one instance started by startInstance.
type running struct {
	out  *testsupport.LogBuffer // what the instance printed
	stop context.CancelFunc
	done chan struct{} // closed when run returned
	err  error         // what run returned, once done is closed
}

// startInstance runs an instance called id on srv, with its own go-redis
// client (default options), until stop.
func startInstance(t *testing.T, srv *redistest.Server, id string) *running {
	ctx, stop := context.WithCancel(testsupport.Ctx(t))
	r := &running{out: &testsupport.LogBuffer{}, stop: stop, done: make(chan struct{})}
	cfg := config{id: id, name: "leader-test", watchdog: 20 * time.Second, work: 50 * time.Millisecond}
	rdb := srv.NewClient()
	go func() {
		defer close(r.done)
		r.err = run(ctx, &console{w: r.out}, rdb, cfg)
	}()
	t.Cleanup(func() {
		stop()
		<-r.done
		_ = rdb.Close()
	})
	return r
}

// One instance leads and works; the other stands by naming it; the leader
// stops (steps down) and the standby leads at once, well within the
// watchdog timeout.
func TestStandbyTakesOverWhenTheLeaderStops(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := startInstance(t, srv, "instance-a")
	testsupport.Eventually(t, 10*time.Second, "a works", func() bool {
		return strings.Contains(a.out.String(), "leading: work run 2")
	})
	b := startInstance(t, srv, "instance-b")
	testsupport.Eventually(t, 10*time.Second, "b names a as the leader", func() bool {
		return strings.Contains(b.out.String(), "standing by: instance-a leads (its lock expires in ")
	})
	assert.NotContains(t, b.out.String(), "leading:")

	a.stop()
	stopped := time.Now()
	testsupport.Recv(t, a.done, 10*time.Second, "a's run")
	require.NoError(t, a.err)
	assert.Contains(t, a.out.String(), "stepping down (context canceled): releasing leader-test")
	assert.Regexp(t, `stopped: no longer campaigning \(\d+ runs of the work here\)`, a.out.String())
	testsupport.Eventually(t, 10*time.Second, "b works", func() bool {
		return strings.Contains(b.out.String(), "leading: work run 1")
	})
	assert.Less(t, time.Since(stopped), 10*time.Second, "handed over, not left to expire (20 s)")
}

// The program as go run starts it, on the embedded Redis: it leads alone,
// and exits cleanly when its context ends.
func TestStartEmbedded(t *testing.T) {
	t.Setenv(devredis.EnvAddr, "")
	ctx, stop := context.WithCancel(testsupport.Ctx(t))
	out := &testsupport.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- start(ctx, out, config{id: "solo", name: "leader-test", watchdog: time.Second, work: 20 * time.Millisecond})
	}()
	testsupport.Eventually(t, 10*time.Second, "it works", func() bool {
		return strings.Contains(out.String(), "leading: work run 1")
	})
	stop()
	require.NoError(t, testsupport.Recv(t, done, 10*time.Second, "start"))
	assert.Contains(t, out.String(), `solo (pid `)
	assert.Contains(t, out.String(), `campaigns for "leader-test" on an embedded Redis`)
}
