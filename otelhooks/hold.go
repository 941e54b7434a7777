package otelhooks

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// holdState is what holdStart keeps for holdEnd and renewal in the context
// it returns: the lock.hold span, and whether the hold counts in
// lock.renew.active.
type holdState struct {
	span     trace.Span
	renewing bool // held without a lease: renewed by the watchdog
}

// holdStart starts the lock.hold span, a child of the caller's span, and
// counts the hold open (and renewed, when it has no lease). The context it
// returns carries the span and becomes the parent of the hold context, so
// work done under the lock is traced inside it.
func (t *telemetry) holdStart(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
	gauge := gaugeAttrs(e.LockInfo)
	t.m.holds.Add(ctx, 1, gauge...)
	renewing := e.Lease == 0 && e.Kind != "multilock" // a multi-lock's members are renewed, each as its own hold
	if renewing {
		t.m.renewing.Add(ctx, 1, gauge...)
	}
	attrs := make([]attribute.KeyValue, 0, 8) // lock.lead is rare: Lead's terms only
	attrs = append(attrs, LockNameKey.String(e.Name), LockWaitedKey.Bool(e.Waited))
	attrs = appendKind(appendLead(appendGroup(attrs, e.Group), e.Lead), e.LockInfo)
	if e.Token > 0 {
		attrs = append(attrs, LockFencingTokenKey.Int64(e.Token))
	}
	if e.Lease > 0 {
		attrs = append(attrs, LockLeaseKey.Float64(e.Lease.Seconds()))
	}
	ctx, span := t.tracer.Start(ctx, HoldSpanName, spanKind, trace.WithAttributes(attrs...))
	return context.WithValue(ctx, holdKey{t}, &holdState{span: span, renewing: renewing})
}

// hold returns the holdState that ctx, a context holdStart returned (or one
// derived from it), carries.
func (t *telemetry) hold(ctx context.Context) (*holdState, bool) {
	if ctx == nil {
		return nil, false
	}
	h, ok := ctx.Value(holdKey{t}).(*holdState)
	return h, ok
}

// holdSpan returns the lock.hold span that ctx, a context holdStart returned
// (or one derived from it), carries.
func (t *telemetry) holdSpan(ctx context.Context) (trace.Span, bool) {
	if h, ok := t.hold(ctx); ok {
		return h.span, true
	}
	return nil, false
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
// when the hold was lost (lock.closed = true when Client.Close abandoned
// it), and counts the hold closed.
func (t *telemetry) holdEnd(ctx context.Context, e lockmw.HoldEndEvent) {
	closed := errors.Is(e.Lost, lockmw.ErrClosed)
	lost := e.Lost != nil && !closed
	// The metrics first: once the span has ended, everything is recorded.
	if t.m.hold.Enabled(ctx) || lost {
		attrs := t.metricAttrs(e.LockInfo)
		t.m.hold.Record(ctx, e.Duration.Seconds(), attrs)
		if lost {
			t.m.lost.Add(ctx, 1, attrs)
		}
	}
	if h, ok := t.hold(ctx); ok {
		gauge := gaugeAttrs(e.LockInfo)
		t.m.holds.Add(ctx, -1, gauge...)
		if h.renewing {
			t.m.renewing.Add(ctx, -1, gauge...)
		}
		span := h.span
		span.SetAttributes(LockLostKey.Bool(lost))
		switch {
		case lost:
			span.SetStatus(codes.Error, e.Lost.Error())
		case closed:
			span.SetAttributes(LockClosedKey.Bool(true))
		}
		span.End()
	}
}
