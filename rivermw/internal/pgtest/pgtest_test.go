package pgtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/rivermw/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRiverDBHasRiversSchemaAndIsDroppedAtCleanup(t *testing.T) {
	srv := pgtest.Start(t)
	var name string
	t.Run("a database", func(t *testing.T) {
		pool := srv.RiverDB(t)
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name))
		var jobs int
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM river_job").Scan(&jobs))
		require.Zero(t, jobs)
	})
	pool := srv.RiverDB(t) // a second database, from the same template
	var exists bool
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists))
	require.False(t, exists, "the first test's database %s was dropped", name)
}
