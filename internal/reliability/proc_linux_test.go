//go:build linux

package reliability_test

import "syscall"

// sysProcAttr makes the kernel SIGKILL a worker when the test binary dies, so
// no worker outlives a crashed or killed test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
