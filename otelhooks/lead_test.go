package otelhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// spansOf returns the ended spans called name of the lock called lockName,
// in the order they ended.
func (tel *telemetry) spansOf(t testing.TB, name, lockName string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.ended(name) {
		if attr(t, s, otelhooks.LockNameKey).AsString() == lockName {
			out = append(out, s)
		}
	}
	return out
}

// A term of lockmw.Lead is a lock.hold span marked lock.lead, and the
// hand-over from one leader to the next is the standby's lock.wait link to
// the first term's hold.
func TestLeadershipInTheSpans(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	a, b := tel.client(t, srv.NewClient()), tel.client(t, srv.NewClient())
	ctx := testsupport.Ctx(t)

	leading, finish := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		ctx, span := tel.request(ctx, "instance a")
		defer span.End()
		errA <- lockmw.Lead(ctx, a.Mutex("leader"), func(lead context.Context) error {
			if err := lockmw.WithLock(lead, a.Mutex("work"), func(context.Context) error { return nil }); err != nil {
				return err
			}
			close(leading)
			<-finish
			return nil
		})
	}()
	testsupport.Recv(t, leading, patience, "a leads")
	testsupport.Eventually(t, patience, "a's hold span stored with the lock", func() bool {
		h, ok, err := b.Mutex("leader").Holder(ctx)
		return err == nil && ok && h.Metadata != ""
	})
	errB := make(chan error, 1)
	bctx, bSpan := tel.request(ctx, "instance b")
	defer bSpan.End()
	go func() {
		errB <- lockmw.Lead(bctx, b.Mutex("leader"), func(context.Context) error { return nil })
	}()
	testsupport.Eventually(t, patience, "b stands by in the queue", func() bool {
		return srv.Client().ZCard(ctx, layout.Mutex("leader").Queue).Val() == 1
	})
	close(finish)
	require.NoError(t, testsupport.Recv(t, errA, patience, "a steps down"))
	require.NoError(t, testsupport.Recv(t, errB, patience, "b leads and steps down"))

	holds := tel.spansOf(t, otelhooks.HoldSpanName, "leader")
	waits := tel.spansOf(t, otelhooks.WaitSpanName, "leader")
	require.Len(t, holds, 2, "two terms")
	require.Len(t, waits, 2, "two campaigns")
	// The terms in their order, by whose they are (not by when their spans
	// ended: a's may end after b's short term on a loaded machine).
	first, second := holds[0], holds[1]
	if first.Parent().SpanID() == bSpan.SpanContext().SpanID() {
		first, second = second, first
	}
	t.Run("each term's hold span is marked", func(t *testing.T) {
		assert.True(t, attr(t, first, otelhooks.LockLeadKey).AsBool())
		assert.True(t, attr(t, second, otelhooks.LockLeadKey).AsBool())
	})
	t.Run("each campaign's wait span is marked", func(t *testing.T) {
		for _, w := range waits {
			assert.True(t, attr(t, w, otelhooks.LockLeadKey).AsBool())
		}
	})
	t.Run("the standby's wait links to the first term: the hand-over", func(t *testing.T) {
		var standby sdktrace.ReadOnlySpan
		for _, w := range waits {
			if attr(t, w, otelhooks.LockWaitedKey).AsBool() {
				standby = w
			}
		}
		require.NotNil(t, standby, "a wait that found the leader")
		assert.True(t, linkedTo(standby, first.SpanContext()), "links %v", standby.Links())
		assert.Equal(t, bSpan.SpanContext().SpanID(), standby.Parent().SpanID(), "the standby's wait is b's")
		assert.Equal(t, bSpan.SpanContext().SpanID(), second.Parent().SpanID(), "the second term is b's")
	})
	t.Run("locks taken inside a term are not marked", func(t *testing.T) {
		for _, name := range []string{otelhooks.WaitSpanName, otelhooks.HoldSpanName} {
			work := tel.spansOf(t, name, "work")
			require.Len(t, work, 1, name)
			assert.False(t, hasAttr(work[0], otelhooks.LockLeadKey), name)
			assert.Equal(t, first.SpanContext().SpanID(), work[0].Parent().SpanID(), "%s is inside the term", name)
		}
	})
}
