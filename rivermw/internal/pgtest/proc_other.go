//go:build !linux

package pgtest

import "syscall"

// sysProcAttr runs the child as cred (nil: as the current user). Only Linux
// has a parent-death signal: elsewhere a crashed test binary leaves its
// postgres running.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
