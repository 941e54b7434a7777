//go:build !linux

package faultproxy

import (
	"sync"
	"time"
)

// A clock times the waits of one direction of a link: here on Go timers,
// which on Linux would round a wait under a millisecond up to a whole one
// (see clock_linux.go).
type clock struct {
	stop chan struct{}
	once sync.Once
}

func newClock() (*clock, error) { return &clock{stop: make(chan struct{})}, nil }

// wait waits d (> 0) and reports false when the clock was closed.
func (c *clock) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	}
}

// close ends a wait under way and every later one.
func (c *clock) close() { c.once.Do(func() { close(c.stop) }) }
