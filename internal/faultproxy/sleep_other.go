//go:build !linux

package faultproxy

import "time"

// sleepUntil blocks until t (on Linux, precisely: see sleep_linux.go).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
