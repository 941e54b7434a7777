package faultproxy

import (
	"syscall"
	"time"
)

// sleepUntil blocks the calling goroutine's thread in nanosleep(2) until t:
// the kernel wakes it within tens of microseconds (its timer slack), where
// a Go timer shorter than a millisecond waits a whole one when the runtime
// is idle (the netpoller's timeout is in milliseconds). Meant for short
// waits: the thread is not the runtime's until it wakes.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil) // EINTR (a runtime signal): sleep again
	}
}
