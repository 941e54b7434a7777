package otelhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

var multilockKind = otelhooks.LockKindKey.String("multilock")

// A multi-lock is traced and measured as a lock of kind multilock, beside
// its members' own spans; its metrics' lock.name is its members' groups,
// so per-entity members with a group keep it bounded.
func TestMultiLockTelemetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := tel.client(t, srv.NewClient())
	ctx, req := tel.request(testsupport.Ctx(t), "request")
	ml := c.MultiLock(c.Mutex("order:42", lockmw.WithGroup("order")), c.Mutex("invoice:42", lockmw.WithGroup("invoice")))

	err := lockmw.WithLock(ctx, ml, func(hctx context.Context) error {
		assert.Equal(t, [3]int64{1, 0, 0}, tel.gauges(t, multilockKind), "holds, waiters, renewed: the members are renewed, not the multi-lock")
		assert.Equal(t, [3]int64{2, 0, 2}, tel.gauges(t, mutexKind))
		_, work := tel.tp.Tracer("test").Start(hctx, "work")
		work.End()
		return nil
	})
	require.NoError(t, err)
	req.End()

	isMulti := func(s sdktrace.ReadOnlySpan) bool {
		return attr(t, s, otelhooks.LockKindKey).AsString() == "multilock"
	}
	for _, name := range []string{otelhooks.WaitSpanName, otelhooks.HoldSpanName} {
		var multi []sdktrace.ReadOnlySpan
		for _, s := range tel.ended(name) {
			assert.Equal(t, req.SpanContext().SpanID(), s.Parent().SpanID(), "%s %s: a child of the caller's span", name, attr(t, s, otelhooks.LockNameKey).AsString())
			if isMulti(s) {
				multi = append(multi, s)
			}
		}
		require.Len(t, multi, 1, "one %s span of kind multilock", name)
		assert.Equal(t, "multi(invoice:42,order:42)", attr(t, multi[0], otelhooks.LockNameKey).AsString())
		assert.Equal(t, "multi(invoice,order)", attr(t, multi[0], otelhooks.LockGroupKey).AsString())
		assert.False(t, hasAttr(multi[0], otelhooks.LockPermitsKey))
		if name == otelhooks.HoldSpanName {
			work := tel.only(t, "work")
			assert.Equal(t, multi[0].SpanContext().SpanID(), work.Parent().SpanID(), "work under the multi-lock is a child of its lock.hold span")
		}
	}
	assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric, multilockKind, otelhooks.LockNameKey.String("multi(invoice,order)")), "the metrics name the members' groups")
	assert.EqualValues(t, 1, tel.histCount(t, otelhooks.WaitDurationMetric, multilockKind, otelhooks.LockOutcomeKey.String("acquired")))
	assert.Equal(t, [3]int64{0, 0, 0}, tel.gauges(t, multilockKind))
}
