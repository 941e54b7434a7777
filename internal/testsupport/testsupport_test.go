package testsupport_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/testsupport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records Fatalf instead of failing the real test.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn on a goroutine of its own, as a test would, and returns the
// message it failed with ("" if it did not).
func fatal(t *testing.T, fn func(tb testing.TB)) string {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.fatal
}

func TestCtx(t *testing.T) {
	var ctx context.Context
	t.Run("lives until the clean-up", func(t *testing.T) {
		ctx = testsupport.Ctx(t)
		deadline, ok := ctx.Deadline()
		require.True(t, ok)
		assert.Greater(t, time.Until(deadline), time.Minute)
		assert.NoError(t, ctx.Err())
	})
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, testsupport.CtxFor(t, time.Nanosecond).Err(), context.DeadlineExceeded)
}

func TestEventually(t *testing.T) {
	n := 0
	assert.Empty(t, fatal(t, func(tb testing.TB) {
		testsupport.Eventually(tb, time.Minute, "the third call", func() bool { n++; return n == 3 })
	}))
	assert.Equal(t, 3, n)
	assert.Equal(t, "not true within 20ms: never", fatal(t, func(tb testing.TB) {
		testsupport.Eventually(tb, 20*time.Millisecond, "never", func() bool { return false })
	}))
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	assert.Equal(t, 7, testsupport.Recv(t, ch, time.Minute, "the value sent"))
	assert.Equal(t, "nothing received within 20ms: nothing", fatal(t, func(tb testing.TB) {
		testsupport.Recv(tb, ch, 20*time.Millisecond, "nothing")
	}))
	close(ch)
	assert.Zero(t, testsupport.Recv(t, ch, time.Minute, "the close"))
}

func TestDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.Equal(t, "context not done within 20ms: live", fatal(t, func(tb testing.TB) {
		testsupport.Done(tb, ctx, 20*time.Millisecond, "live")
	}))
	assert.EqualError(t, testsupport.WaitDone(ctx, 20*time.Millisecond), "testsupport: context not done within 20ms")
	cancel()
	testsupport.Done(t, ctx, time.Minute, "cancelled")
	assert.Equal(t, context.Canceled, testsupport.WaitDone(ctx, time.Minute))
}

func TestPeakKeepsTheMostAtOnce(t *testing.T) {
	var p testsupport.Peak
	p.Enter()
	p.Enter()
	p.Leave()
	p.Enter()
	p.Leave()
	p.Leave()
	require.Equal(t, 2, p.Max())
}

func TestLogBuffer(t *testing.T) {
	var b testsupport.LogBuffer
	assert.Nil(t, b.Lines(), "nothing written: no lines")
	done := make(chan struct{})
	go func() { defer close(done); fmt.Fprintln(&b, "one busy") }()
	<-done
	fmt.Fprintln(&b, "two busy")
	assert.Equal(t, []string{"one busy", "two busy"}, b.Lines())
	assert.Equal(t, 2, b.Count("busy"))
	assert.Equal(t, "one busy\ntwo busy\n", b.String())
}
