package grpcmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
)

func TestConfigurationPanics(t *testing.T) {
	locks := locktest.NewDown(t)
	for _, tc := range []struct {
		name string
		opts []grpcmw.Option
		want string
	}{
		{"a nil option", []grpcmw.Option{nil}, "grpcmw: New: nil Option"},
		{"a nil key function", []grpcmw.Option{grpcmw.WithKey(nil)}, "grpcmw: WithKey(nil): a key function is required"},
		{"a negative wait", []grpcmw.Option{grpcmw.WithWait(-time.Second)}, "grpcmw: WithWait(-1s): must not be negative"},
		{"a negative lease", []grpcmw.Option{grpcmw.WithLease(-time.Second)}, "grpcmw: WithLease(-1s): must not be negative"},
		{"no permits", []grpcmw.Option{grpcmw.WithPermits(0)}, "grpcmw: WithPermits(0): must be at least 1"},
		{"an empty metadata key", []grpcmw.Option{grpcmw.WithMetadataKey("")}, `grpcmw: WithMetadataKey(""): a metadata key is required`},
		{"a binary metadata key", []grpcmw.Option{grpcmw.WithMetadataKey("x-id-bin")}, `grpcmw: WithMetadataKey("x-id-bin"): a binary (-bin) key cannot name a lock`},
		{"a reserved metadata key", []grpcmw.Option{grpcmw.WithMetadataKey("grpc-timeout")}, `grpcmw: WithMetadataKey("grpc-timeout"): grpc- keys are reserved`},
		{"not a metadata key", []grpcmw.Option{grpcmw.WithMetadataKey("x tenant")}, `grpcmw: WithMetadataKey("x tenant"): not a metadata key (lower-case letters, digits, '-', '_', '.')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { grpcmw.New(locks, tc.opts...) })
		})
	}
	t.Run("a nil Client", func(t *testing.T) {
		assert.PanicsWithValue(t, "grpcmw: New(nil): a lockmw.Client is required", func() { grpcmw.New(nil) })
	})
	t.Run("the defaults", func(t *testing.T) {
		assert.Equal(t, 10*time.Second, grpcmw.DefaultWait)
		assert.Equal(t, time.Second, grpcmw.DefaultRetryAfter)
		assert.Equal(t, "rpc:", grpcmw.KeyPrefix)
		assert.NotPanics(t, func() {
			grpcmw.New(locks, grpcmw.WithMetadataKey("X-Tenant"), grpcmw.WithKey(func(context.Context, string, any) (string, error) { return "", nil }))
		})
	})
}
