package main

import (
	"sync"
	"time"
)

// after is a func to call a while after the start of a run.
type after struct {
	d  time.Duration
	do func()
}

// together runs f(0..n-1) on n goroutines released at once, at base, calls
// each timer's func its d after base, and returns when every f has
// returned; the timers that have not fired by then are stopped.
func together(n int, f func(i int, base time.Time), timers ...after) {
	start := make(chan struct{})
	var base time.Time
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i, base)
		})
	}
	base = time.Now()
	for _, t := range timers {
		defer time.AfterFunc(t.d, t.do).Stop()
	}
	close(start)
	wg.Wait()
}
