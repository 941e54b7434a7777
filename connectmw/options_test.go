package connectmw_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/connectmw"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

func TestConfigurationPanics(t *testing.T) {
	locks := locktest.NewDown(t)
	for _, tc := range []struct {
		name string
		opts []connectmw.Option
		want string
	}{
		{"a nil option", []connectmw.Option{nil}, "connectmw: New: nil Option"},
		{"a nil key function", []connectmw.Option{connectmw.WithKey(nil)}, "connectmw: WithKey(nil): a key function is required"},
		{"a nil stream key function", []connectmw.Option{connectmw.WithStreamKey(nil)}, "connectmw: WithStreamKey(nil): a key function is required"},
		{"a negative wait", []connectmw.Option{connectmw.WithWait(-time.Second)}, "connectmw: WithWait(-1s): must not be negative"},
		{"a negative lease", []connectmw.Option{connectmw.WithLease(-time.Second)}, "connectmw: WithLease(-1s): must not be negative"},
		{"no permits", []connectmw.Option{connectmw.WithPermits(0)}, "connectmw: WithPermits(0): must be at least 1"},
		{"an empty header", []connectmw.Option{connectmw.WithHeaderKey("")}, `connectmw: WithHeaderKey(""): a metadata key is required`},
		{"a binary header", []connectmw.Option{connectmw.WithHeaderKey("X-Id-Bin")}, `connectmw: WithHeaderKey("x-id-bin"): a binary (-bin) key cannot name a lock`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { connectmw.New(locks, tc.opts...) })
		})
	}
	t.Run("a nil Client", func(t *testing.T) {
		assert.PanicsWithValue(t, "connectmw: New(nil): a lockmw.Client is required", func() { connectmw.New(nil) })
	})
	t.Run("the defaults are grpcmw's", func(t *testing.T) {
		assert.Equal(t, 10*time.Second, connectmw.DefaultWait)
		assert.Equal(t, time.Second, connectmw.DefaultRetryAfter)
		assert.Equal(t, "rpc:", connectmw.KeyPrefix)
	})
}
