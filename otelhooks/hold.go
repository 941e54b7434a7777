package otelhooks

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// holdStart starts the lock.hold span, a child of the caller's span. The
// context it returns carries the span and becomes the parent of the hold
// context, so work done under the lock is traced inside it.
func (t *telemetry) holdStart(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, LockNameKey.String(e.Name), LockWaitedKey.Bool(e.Waited))
	attrs = appendKind(appendGroup(attrs, e.Group), e.Permits)
	if e.Token > 0 {
		attrs = append(attrs, LockFencingTokenKey.Int64(e.Token))
	}
	if e.Lease > 0 {
		attrs = append(attrs, LockLeaseKey.Float64(e.Lease.Seconds()))
	}
	ctx, span := t.tracer.Start(ctx, HoldSpanName, spanKind, trace.WithAttributes(attrs...))
	return context.WithValue(ctx, holdKey{t}, span)
}

// holdSpan returns the lock.hold span that ctx, a context holdStart returned
// (or one derived from it), carries.
func (t *telemetry) holdSpan(ctx context.Context) (trace.Span, bool) {
	if ctx == nil {
		return nil, false
	}
	span, ok := ctx.Value(holdKey{t}).(trace.Span)
	return span, ok
}

// metadata is the hold span's context in W3C traceparent form, stored with
// the lock so that waiters can link to it.
func (t *telemetry) metadata(ctx context.Context, _ string) string {
	span, ok := t.holdSpan(ctx)
	if !ok {
		return ""
	}
	return formatTraceparent(span.SpanContext())
}

// holdEnd ends the lock.hold span, with status Error and lock.lost = true
// when the hold was lost.
func (t *telemetry) holdEnd(ctx context.Context, e lockmw.HoldEndEvent) {
	// The metrics first: once the span has ended, everything is recorded.
	if t.m.hold.Enabled(ctx) || e.Lost {
		attrs := t.metricAttrs(e.Name, e.Group, e.Permits)
		t.m.hold.Record(ctx, e.Duration.Seconds(), attrs)
		if e.Lost {
			t.m.lost.Add(ctx, 1, attrs)
		}
	}
	if span, ok := t.holdSpan(ctx); ok {
		span.SetAttributes(LockLostKey.Bool(e.Lost))
		switch {
		case e.Lost:
			msg := "lock lost"
			if e.Err != nil {
				msg = e.Err.Error()
			}
			span.SetStatus(codes.Error, msg)
		case errors.Is(e.Err, lockmw.ErrClosed):
			span.SetAttributes(LockClosedKey.Bool(true))
		}
		span.End()
	}
}
