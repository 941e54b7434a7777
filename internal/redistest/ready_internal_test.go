package redistest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadyOnlyWhenItsOwnProcessAnswers: a server is ready when the
// process started answers on its port, not any listener there. A port
// picked here can be taken by another process's listener before
// redis-server binds it (a fault proxy of a test beside, which forwards to
// its own server and so answers PING); that redis-server exits, and a
// PING alone took it for started.
func TestReadyOnlyWhenItsOwnProcessAnswers(t *testing.T) {
	s := Start(t)
	never := make(chan struct{})
	require.NoError(t, waitReady(s.Addr(), s.Pid(), never, 10*time.Second), "its own process answers")
	err := waitReady(s.Addr(), s.Pid()+1, never, 200*time.Millisecond)
	require.Error(t, err, "another process's server answering on the port is not this one")
	assert.Contains(t, err.Error(), "is answered by pid")
}
