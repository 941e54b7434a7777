//go:build !linux

package redistest

import "syscall"

// sysProcAttr: Pdeathsig is Linux only; elsewhere a crashed test binary can
// leave a redis-server behind.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// procState is not available outside Linux.
func procState(int) string { return "" }
