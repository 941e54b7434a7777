//go:build !linux

package reliability_test

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
