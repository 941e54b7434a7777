package otelhooks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

func TestTraceparentRoundTrip(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	s := formatTraceparent(sc)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", s)
	assert.LessOrEqual(t, len(s), lockmw.MaxMetadataLen)
	got, ok := parseTraceparent(s)
	require.True(t, ok)
	assert.True(t, got.Equal(sc), "got %v, want %v", got, sc)
	assert.False(t, got.IsRemote())

	unsampled := sc.WithTraceFlags(0)
	got, ok = parseTraceparent(formatTraceparent(unsampled))
	require.True(t, ok)
	assert.True(t, got.Equal(unsampled))
}

func TestTraceparentRejectsWhatIsNotOne(t *testing.T) {
	t.Parallel()
	assert.Empty(t, formatTraceparent(trace.SpanContext{}))
	for _, s := range []string{
		"",
		"user metadata",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace ID
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span ID
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff is invalid
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",    // no flags
		strings.Repeat("0", 600),
	} {
		_, ok := parseTraceparent(s)
		assert.False(t, ok, "%q parsed", s)
	}
}
