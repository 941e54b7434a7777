//go:build linux

package redistest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr makes the kernel SIGKILL the child when the thread that started
// it dies, which for a Go program means when the test binary exits, crashes
// or is killed. (Go only retires an OS thread when a goroutine locked to it
// exits, which neither this package nor the tests do.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// procState returns the state letter of pid from /proc/<pid>/stat ("R", "S",
// "T" for stopped, ...), or "" if it cannot be read.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...; comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}
