package otelhooks

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// acquireStart starts the lock.wait span, a child of the caller's span,
// and counts a new acquisition as a waiter.
func (t *telemetry) acquireStart(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
	if !e.Reentrant {
		t.m.waits.Add(ctx, 1, gaugeAttrs(e.LockInfo)...)
	}
	attrs := make([]attribute.KeyValue, 0, 6) // lock.lead is rare: Lead's campaigns only
	attrs = append(attrs, LockNameKey.String(e.Name), LockReentrantKey.Bool(e.Reentrant))
	attrs = appendKind(appendLead(appendGroup(attrs, e.Group), e.Lead), e.LockInfo)
	ctx, span := t.tracer.Start(ctx, WaitSpanName, spanKind, trace.WithAttributes(attrs...))
	return context.WithValue(ctx, waitKey{t}, span)
}

// acquireEnd ends the lock.wait span: the outcome, and when the lock was busy
// the holder and a link to each lock.hold span it waited for (a mutex's
// holder, a read-write lock's writer or readers, a semaphore's permits that
// expire first, the hold that handed it over: lockmw's HoldersMetadata, at
// most lockmw.MaxHoldersMetadata), read from the metadata the holders stored
// with the lock. A new acquisition stops
// counting as a waiter.
func (t *telemetry) acquireEnd(ctx context.Context, e lockmw.AcquireEndEvent) {
	outcome := LockOutcomeKey.String(e.Outcome.String())
	// The metrics first: once the span has ended, everything is recorded.
	if t.m.wait.Enabled(ctx) {
		t.m.wait.Record(ctx, e.Duration.Seconds(), t.metricAttrs(e.LockInfo, outcome, LockReentrantKey.Bool(e.Reentrant)))
	}
	span, ok := ctx.Value(waitKey{t}).(trace.Span)
	if !ok {
		return // an acquisition acquireStart did not see (nor count)
	}
	if !e.Reentrant {
		t.m.waits.Add(ctx, -1, gaugeAttrs(e.LockInfo)...)
	}
	span.SetAttributes(outcome, LockWaitedKey.Bool(e.Waited))
	if e.Waited {
		if e.Holder != "" {
			span.SetAttributes(LockHolderKey.String(e.Holder))
		}
		metas := e.HoldersMetadata
		if len(metas) == 0 {
			metas = []string{e.HolderMetadata}
		}
		for _, m := range metas { // at most lockmw.MaxHoldersMetadata
			if sc, ok := parseTraceparent(m); ok {
				span.AddLink(trace.Link{SpanContext: sc, Attributes: holderLinkAttrs})
			}
		}
	}
	if e.Token > 0 {
		span.SetAttributes(LockFencingTokenKey.Int64(e.Token))
	}
	if e.Outcome == lockmw.OutcomeFailed && e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End()
}
