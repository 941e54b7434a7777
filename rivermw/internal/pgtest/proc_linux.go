//go:build linux

package pgtest

import "syscall"

// sysProcAttr runs the child as cred (nil: as the current user) and makes the
// kernel SIGKILL it when the thread that started it dies, which for a Go
// program means when the test binary exits, crashes or is killed. Go sets
// the parent-death signal after switching to cred, which would clear it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
