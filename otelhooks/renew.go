package otelhooks

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// renewal makes one lock.renew span for one renewal script: a root span (the
// watchdog works for no request) linked to the lock.hold span of every lock
// the script renewed, so that a batch of 100 locks is one span, not 100.
// Each link says which lock it is and how its renewal went.
func (t *telemetry) renewal(e lockmw.RenewalEvent) {
	end := time.Now()
	links := make([]trace.Link, 0, len(e.Locks))
	var counts [3]int64 // by lockmw.RenewalOutcome
	ctx := context.Background()
	byName := t.nameAttr && t.m.renewals.Enabled(ctx)
	for _, l := range e.Locks {
		o := l.Outcome
		if o < lockmw.Renewed || o > lockmw.RenewFailed {
			o = lockmw.RenewFailed
		}
		counts[o]++
		if span, ok := t.holdSpan(l.Context); ok {
			if sc := span.SpanContext(); sc.IsValid() {
				links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
					LockNameKey.String(l.Name),
					LockOutcomeKey.String(o.String()),
				}})
			}
		}
		if byName {
			t.m.renewals.Add(ctx, 1, t.metricAttrs(l.Name, LockOutcomeKey.String(o.String())))
		}
	}
	if !t.nameAttr {
		for o, n := range counts {
			if n > 0 {
				t.m.renewals.Add(ctx, n, metric.WithAttributes(LockOutcomeKey.String(lockmw.RenewalOutcome(o).String())))
			}
		}
	}

	outcome := lockmw.Renewed
	switch {
	case e.Err != nil || counts[lockmw.RenewFailed] > 0:
		outcome = lockmw.RenewFailed
	case counts[lockmw.RenewLost] > 0:
		outcome = lockmw.RenewLost
	}
	_, span := t.tracer.Start(ctx, RenewSpanName, spanKind,
		trace.WithNewRoot(),
		trace.WithTimestamp(end.Add(-e.Duration)),
		trace.WithLinks(links...),
		trace.WithAttributes(
			LockOutcomeKey.String(outcome.String()),
			LockCountKey.Int(len(e.Locks)),
			LockRenewedCountKey.Int64(counts[lockmw.Renewed]),
			LockLostCountKey.Int64(counts[lockmw.RenewLost]),
			LockFailedCountKey.Int64(counts[lockmw.RenewFailed]),
		))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}
