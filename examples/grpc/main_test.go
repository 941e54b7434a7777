package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTheExampleSaysWhatItsDocSays runs the example against a real
// redis-server: the Checks never overlap, and both servers answer a held
// lock Aborted with a retry delay.
func TestTheExampleSaysWhatItsDocSays(t *testing.T) {
	srv := redistest.Start(t)
	var out strings.Builder
	require.NoError(t, run(testsupport.Ctx(t), &out, srv.Client()))
	got := out.String()
	assert.Equal(t, 4, strings.Count(got, "Check starts"), got)
	assert.Contains(t, got, "at most one Check ran at a time\n")
	assert.Contains(t, got, "grpc-go: Aborted, retry in 1s (RetryInfo; grpc-retry-pushback-ms 1000)\n")
	assert.Contains(t, got, "connect-go: aborted, retry in 1s (RetryInfo)\n")
}
