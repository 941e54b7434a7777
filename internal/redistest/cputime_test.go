package redistest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/redistest"
)

// CPUTime grows as the server works: a Lua loop burns CPU on the server.
func TestCPUTime(t *testing.T) {
	srv := redistest.Start(t)
	before, err := srv.CPUTime(t.Context())
	require.NoError(t, err)
	require.NoError(t, srv.Client().Eval(t.Context(), "for i = 1, 3000000 do end return 1", nil).Err())
	after, err := srv.CPUTime(t.Context())
	require.NoError(t, err)
	require.Greater(t, after, before)
}
