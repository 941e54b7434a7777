package otelhooks

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// SkipEventName is the span event a skip adds to the caller's span (the
// request's, the task's) when that span records.
const SkipEventName = "lock.skip"

// skip counts a skip an adapter reported (lockmw.Client.ReportSkip) in
// lock.skips, by reason and lock.adapter, two closed sets, and
// for a skip that names its lock, by the lock's bounded metric attributes
// (lock.kind, lock.permits, lock.name under the name policy: its group).
// A skip that names no lock (a request refused before it had a key) has
// reason and lock.adapter alone. It also adds a lock.skip event
// to the caller's span, with the full lock name.
func (t *telemetry) skip(ctx context.Context, e lockmw.SkipEvent) {
	reason := LockSkipReasonKey.String(e.Reason.String())
	if t.m.skips.Enabled(ctx) {
		if e.Name == "" {
			t.m.skips.Add(ctx, 1, metric.WithAttributes(appendAdapter([]attribute.KeyValue{reason}, e.Adapter)...))
		} else {
			t.m.skips.Add(ctx, 1, t.metricAttrs(e.LockInfo, reason))
		}
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, reason)
	if e.Name != "" {
		attrs = appendKind(appendGroup(append(attrs, LockNameKey.String(e.Name)), e.Group), e.LockInfo)
	} else {
		attrs = appendAdapter(attrs, e.Adapter)
	}
	span.AddEvent(SkipEventName, trace.WithAttributes(attrs...))
}
