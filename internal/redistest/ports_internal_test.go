package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoppedServersPortStaysReserved: a stopped server's port is held for
// its Restart against this process's other servers (the map) and against
// other processes (the port's flock: a second lock of the file, as another
// test binary would take it, is refused) until the server is closed.
func TestStoppedServersPortStaysReserved(t *testing.T) {
	s := Start(t)
	require.NoError(t, s.Stop())
	port := s.Port()

	f, taken := lockPort(port)
	assert.True(t, taken, "another process could take the stopped server's port")
	if f != nil {
		f.Close()
	}
	require.NoError(t, s.Restart())
	assert.Equal(t, port, s.Port(), "the same port after Restart")

	require.NoError(t, s.Close())
	f, taken = lockPort(port)
	assert.False(t, taken, "a closed server's port is free again")
	require.NotNil(t, f)
	require.NoError(t, f.Close())
}
