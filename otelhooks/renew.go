package otelhooks

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// renewal makes one lock.renew span for one renewal script: a root span (the
// watchdog works for no request) linked to the lock.hold span of every lock
// the script renewed, so that a batch of 100 locks is one span, not 100.
// Each link says which lock it is, what kind, and how its renewal went. One
// script may renew mutexes and semaphores' permits together, so the span
// itself has no lock.kind.
func (t *telemetry) renewal(e lockmw.RenewalEvent) {
	end := time.Now()
	links := make([]trace.Link, 0, len(e.Locks))
	var counts [3]int64 // by lockmw.RenewalOutcome
	var byKind renewalCounts
	ctx := context.Background()
	byName := t.nameAttr && t.m.renewals.Enabled(ctx)
	for _, l := range e.Locks {
		o := l.Outcome
		if o < lockmw.RenewalOK || o > lockmw.RenewalFailed {
			o = lockmw.RenewalFailed
		}
		counts[o]++
		if span, ok := t.holdSpan(l.Context); ok {
			if sc := span.SpanContext(); sc.IsValid() {
				attrs := make([]attribute.KeyValue, 0, 6)
				attrs = append(attrs, LockNameKey.String(l.Name), LockOutcomeKey.String(o.String()))
				links = append(links, trace.Link{SpanContext: sc, Attributes: appendKind(appendGroup(attrs, l.Group), l.LockInfo)})
			}
		}
		switch {
		case byName:
			t.m.renewals.Add(ctx, 1, t.metricAttrs(l.LockInfo, LockOutcomeKey.String(o.String())))
		case !t.nameAttr:
			byKind.add(o, l.LockInfo)
		}
	}
	for _, c := range byKind {
		t.m.renewals.Add(ctx, c.n, t.metricAttrs(c.kind, LockOutcomeKey.String(c.outcome.String())))
	}

	outcome := lockmw.RenewalOK
	switch {
	case e.Err != nil || counts[lockmw.RenewalFailed] > 0:
		outcome = lockmw.RenewalFailed
	case counts[lockmw.RenewalLost] > 0:
		outcome = lockmw.RenewalLost
	}
	_, span := t.tracer.Start(ctx, RenewSpanName, spanKind,
		trace.WithNewRoot(),
		trace.WithTimestamp(end.Add(-e.Duration)),
		trace.WithLinks(links...),
		trace.WithAttributes(
			LockOutcomeKey.String(outcome.String()),
			LockCountKey.Int(len(e.Locks)),
			LockRenewedCountKey.Int64(counts[lockmw.RenewalOK]),
			LockLostCountKey.Int64(counts[lockmw.RenewalLost]),
			LockFailedCountKey.Int64(counts[lockmw.RenewalFailed]),
		))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// renewalCounts counts the locks of a renewal script by outcome and kind
// (lock.kind, lock.permits, lock.mode, lock.adapter), for the lock.renewals metric without
// lock.name: a few entries, so a slice.
type renewalCounts []renewalCount

type renewalCount struct {
	outcome lockmw.RenewalOutcome
	kind    lockmw.LockInfo // Kind, Permits, Mode and Adapter only
	n       int64
}

func (rc *renewalCounts) add(o lockmw.RenewalOutcome, info lockmw.LockInfo) {
	k := lockmw.LockInfo{Kind: info.Kind, Permits: info.Permits, Mode: info.Mode, Adapter: info.Adapter}
	for i := range *rc {
		if c := &(*rc)[i]; c.outcome == o && c.kind == k {
			c.n++
			return
		}
	}
	*rc = append(*rc, renewalCount{outcome: o, kind: k, n: 1})
}
