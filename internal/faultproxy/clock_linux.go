package faultproxy

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A clock times the waits of one direction of a link. On Linux it is a
// timerfd that the runtime's network poller watches like a socket: a wait
// ends when the kernel's high-resolution timer fires, tens of microseconds
// late, with the goroutine parked meanwhile as on a read. A Go timer
// shorter than a millisecond waits a whole one when the runtime is idle
// (the poller's timeout is in milliseconds): 500 µs each way gave a PING
// of 2.2 ms on timers, 1.2 ms on a timerfd. Sleeping in nanosleep(2) is as
// precise, but holds the P through the syscall: two sleeping wires stall a
// 2-CPU process.
type clock struct{ f *os.File }

func newClock() (*clock, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, 1 /* CLOCK_MONOTONIC */, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil, fmt.Errorf("faultproxy: timerfd_create: %w", errno)
	}
	return &clock{f: os.NewFile(fd, "faultproxy-clock")}, nil
}

// wait waits d (> 0) and reports false when the clock was closed.
func (c *clock) wait(d time.Duration) bool {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return false
	}
	spec := [2]syscall.Timespec{{}, syscall.NsecToTimespec(int64(d))} // no interval, one expiry after d
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	}); err != nil || errno != 0 {
		return false
	}
	var expiries [8]byte
	_, err = c.f.Read(expiries[:])
	return err == nil
}

// close ends a wait under way and every later one.
func (c *clock) close() { _ = c.f.Close() }
