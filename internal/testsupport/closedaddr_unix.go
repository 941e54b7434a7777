//go:build unix

package testsupport

import (
	"fmt"
	"syscall"
	"testing"
)

// ClosedAddr returns a loopback address nothing listens on, for the test's
// life: a TCP socket bound to it that does not listen, so a connection is
// refused and no other process can take the port meanwhile (a port found
// free and let go was taken by a parallel test's redis-server, and the
// command under test reached it: make stress, cmd/rlock).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
