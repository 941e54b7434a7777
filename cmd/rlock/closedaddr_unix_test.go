//go:build unix

package main_test

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// closedAddr returns a loopback address nothing listens on, for the test's
// life: a TCP socket bound to it that does not listen, so a connection is
// refused and no other process can take the port meanwhile (a port found
// free and let go was taken by a parallel test's redis-server, and the
// command under test reached it).
func closedAddr(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
