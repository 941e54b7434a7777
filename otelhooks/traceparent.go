package otelhooks

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The holder's span context travels through Redis as a W3C traceparent,
// "00-<trace-id>-<span-id>-<flags>" (55 bytes), in the lock hash's
// "rlock:meta" field, which Redisson ignores; a waiter gets it back with its
// busy reply. Any process that traces with W3C trace context can read it.

const traceparentHeader = "traceparent"

var traceContext propagation.TraceContext

// holderLinkAttrs mark the link from a lock.wait span to the holder's
// lock.hold span.
var holderLinkAttrs = []attribute.KeyValue{attribute.String("lock.link", "holder")}

// formatTraceparent returns sc as a traceparent, or "" when sc is invalid.
// Written by hand: it runs on every hold, and this is one allocation.
func formatTraceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// parseTraceparent returns the span context s describes. It is not marked
// remote, so that it equals the holder's own span context: the link points at
// a span, wherever that span was recorded.
func parseTraceparent(s string) (trace.SpanContext, bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), &oneHeader{v: s}))
	return sc.WithRemote(false), sc.IsValid()
}

// oneHeader is a propagation.TextMapCarrier of the traceparent header alone,
// to read one with the SDK's own parser.
type oneHeader struct{ v string }

func (c *oneHeader) Get(key string) string {
	if key == traceparentHeader {
		return c.v
	}
	return ""
}

func (c *oneHeader) Set(key, value string) {
	if key == traceparentHeader {
		c.v = value
	}
}

func (c *oneHeader) Keys() []string { return []string{traceparentHeader} }
