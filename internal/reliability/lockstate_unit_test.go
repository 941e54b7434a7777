package reliability_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A quorum's hold first seen on one master, its acquisition still on its
// way to the others, then on all three, is a hold, not a partial win: the
// sampler counts the most masters a holder was seen on at once, though its
// holders and queue did not change between the samples. A field seen on one
// master only is a partial win.
func TestSamplerCountsTheMastersOfAHoldSeenEarly(t *testing.T) {
	t.Parallel()
	s := &sampler{others: make([]*redis.Client, 2), changes: make(map[string][]lockState)}
	at := time.Now()
	s.record("n", lockState{at: at, holders: []string{"won"}, ttls: []time.Duration{time.Second}, masters: []int{1}})
	s.record("n", lockState{at: at.Add(time.Millisecond), holders: []string{"won"}, ttls: []time.Duration{time.Second}, masters: []int{3}})
	s.record("n", lockState{at: at.Add(2 * time.Millisecond)})
	s.record("n", lockState{at: at.Add(3 * time.Millisecond), holders: []string{"partial"}, ttls: []time.Duration{time.Second}, masters: []int{1}})
	s.record("n", lockState{at: at.Add(4 * time.Millisecond), holders: []string{"partial"}, ttls: []time.Duration{time.Second}, masters: []int{1}})
	require.Len(t, s.changes["n"], 3, "one change per holder and one free")
	got := s.holders("n")
	require.Len(t, got, 2)
	assert.Equal(t, "won", got[0].field)
	assert.Equal(t, at, got[0].at, "first seen")
	assert.False(t, got[0].partial, "seen on all three masters")
	assert.Equal(t, "partial", got[1].field)
	assert.True(t, got[1].partial, "seen on one master only")
}

// The sampler's CPU pressure over a window is the growth of the readings
// around it, so a window between two readings still counts the waiting
// that may have fallen in it.
func TestSamplerStarvedInWidensToTheReadingsAround(t *testing.T) {
	t.Parallel()
	at := time.Now()
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	s := &sampler{}
	assert.Zero(t, s.starvedIn(ms(0), ms(100)), "no readings: the kernel did not tell")
	s.waited = []pressureAt{{ms(0), 1 * time.Second}, {ms(20), 1*time.Second + 5*time.Millisecond}, {ms(40), 1*time.Second + 15*time.Millisecond}, {ms(60), 1*time.Second + 16*time.Millisecond}}
	assert.Equal(t, 15*time.Millisecond, s.starvedIn(ms(0), ms(40)))
	assert.Equal(t, 10*time.Millisecond, s.starvedIn(ms(25), ms(35)), "within one interval: its whole growth")
	assert.Equal(t, 16*time.Millisecond, s.starvedIn(ms(-10), ms(90)), "beyond the readings: what they cover")
	assert.Equal(t, 11*time.Millisecond, s.starvedIn(ms(21), ms(60)))
}
