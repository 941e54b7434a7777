package rivermw

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	o := newOptions(nil)
	require.Equal(t, 1, o.permits, "one job of a key at a time")
	require.Equal(t, time.Second, DefaultSnooze)
	require.Equal(t, DefaultSnooze, o.snooze)
	require.Zero(t, DefaultWait)
	require.Equal(t, DefaultWait, o.wait)
	require.Equal(t, Unlimited, o.maxSnoozes)
	require.Equal(t, "river:", DefaultKeyPrefix)
	require.Equal(t, DefaultKeyPrefix, o.prefix)
	require.Same(t, slog.Default(), o.logger)
	require.NotNil(t, o.key)
}

func TestJitterStaysWithinHalfTheDelayAbove(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{time.Nanosecond, 3 * time.Nanosecond, 20 * time.Millisecond, DefaultSnooze} {
		seen := map[time.Duration]bool{}
		for range 1000 {
			j := jitter(d)
			require.GreaterOrEqual(t, j, d)
			require.Less(t, j, d+max(d/2, 1))
			seen[j] = true
		}
		if d >= 20*time.Millisecond {
			require.Greater(t, len(seen), 100, "the delays of %v are spread", d)
		}
	}
}

func TestSnoozeCountReadsRiversMetadata(t *testing.T) {
	t.Parallel()
	for md, want := range map[string]int64{
		`{}`:                          0,
		`{"snoozes": 3}`:              3,
		`{"snoozes": 3, "other": {}}`: 3,
		`{"snoozes": "3"}`:            0,
		`not json`:                    0,
		``:                            0,
	} {
		require.Equal(t, want, snoozeCount([]byte(md)), md)
	}
}
