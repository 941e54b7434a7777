package rpclock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/rpclock"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestNames(t *testing.T) {
	locks := locktest.NewDown(t)
	values := map[string][]string{"x-tenant": {"a&b c"}, "x-order": {"7"}, "x-two": {"1", "2"}}
	get := func(k string) []string { return values[k] }
	s := rpclock.DefaultSettings()
	s.AddHeader("WithMetadataKey", "X-Tenant")
	s.AddHeader("WithMetadataKey", "x-order")
	require.Empty(t, s.Invalid())

	for _, tc := range []struct {
		name    string
		permits int
		key     string
		want    string
	}{
		{"a method's key gets the values", 1, rpclock.MethodKey("/p.S/M"), "rpc:/p.S/M#x-tenant=a%26b+c&x-order=7"},
		{"a limit inserts limit: after rpc:", 3, rpclock.MethodKey("/p.S/M"), "rpc:limit:/p.S/M#x-tenant=a%26b+c&x-order=7"},
		{"a limit puts limit: in front of another key", 3, "orders", "limit:orders#x-tenant=a%26b+c&x-order=7"},
		{"an empty key stays empty", 3, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			s.Permits = tc.permits
			name, r := rpclock.New(locks, s, lockmw.AdapterGRPC).Name(tc.key, get)
			require.Nil(t, r)
			assert.Equal(t, tc.want, name)
		})
	}
	t.Run("a key without exactly one value is refused", func(t *testing.T) {
		for _, h := range []string{"x-missing", "x-two"} {
			s := rpclock.DefaultSettings()
			s.AddHeader("WithMetadataKey", h)
			_, r := rpclock.New(locks, s, lockmw.AdapterGRPC).Name("k", get)
			require.NotNil(t, r, h)
			assert.Equal(t, rpclock.InvalidArgument, r.Code)
		}
	})
	t.Run("the group is the method's name, with the limit", func(t *testing.T) {
		s := rpclock.DefaultSettings()
		assert.Equal(t, "rpc:/p.S/M", rpclock.New(locks, s, lockmw.AdapterGRPC).Group("/p.S/M"))
		s.Permits = 2
		assert.Equal(t, "rpc:limit:/p.S/M", rpclock.New(locks, s, lockmw.AdapterGRPC).Group("/p.S/M"))
	})
}
