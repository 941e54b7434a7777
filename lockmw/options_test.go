package lockmw_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/lockmw"
)

// The options convention: option constructors never panic; New and
// NewQuorum apply the options, then panic on a nil Option or an invalid
// value with one line naming the option and the value.
func TestNewPanicsNamingTheInvalidOption(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	for _, tc := range []struct {
		name string
		opt  lockmw.Option
		want string
	}{
		{"a nil Option", nil, "lockmw: New: nil Option"},
		{"a zero watchdog timeout", lockmw.WithWatchdogTimeout(0), "lockmw: WithWatchdogTimeout(0s): must be at least 3ms"},
		{"a watchdog timeout under 3ms", lockmw.WithWatchdogTimeout(2 * time.Millisecond), "lockmw: WithWatchdogTimeout(2ms): must be at least 3ms"},
		{"an empty client ID", lockmw.WithClientID(""), `lockmw: WithClientID(""): the client ID must not be empty`},
		{"a client ID with a pipe", lockmw.WithClientID("a|b"), `lockmw: WithClientID("a|b"): the client ID must not contain '|'`},
		{"a nil logger", lockmw.WithLogger(nil), "lockmw: WithLogger(nil): a logger is required"},
		{"a zero release timeout", lockmw.WithReleaseTimeout(0), "lockmw: WithReleaseTimeout(0s): must be positive"},
		{"a negative release timeout", lockmw.WithReleaseTimeout(-time.Second), "lockmw: WithReleaseTimeout(-1s): must be positive"},
		{"no replicas to sync", lockmw.WithReplicaSync(0, time.Second), "lockmw: WithReplicaSync(0, 1s): replicas must be at least 1"},
		{"a zero replica timeout", lockmw.WithReplicaSync(1, 0), "lockmw: WithReplicaSync(1, 0s): timeout must be positive"},
	} {
		t.Run(tc.name+" panics in New, not in the option", func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { lockmw.New(rdb, tc.opt) })
			assert.PanicsWithValue(t, tc.want, func() { lockmw.NewQuorum([]redis.UniversalClient{rdb}, tc.opt) })
		})
	}
}

func TestLaterOptionsOverrideEarlierOnes(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	c := lockmw.New(rdb, lockmw.WithClientID("a|b"), lockmw.WithClientID("second"),
		lockmw.WithWatchdogTimeout(0), lockmw.WithWatchdogTimeout(time.Second))
	defer c.Close()
	assert.Equal(t, "second", c.ID(), "the result is checked, not each option")
}
