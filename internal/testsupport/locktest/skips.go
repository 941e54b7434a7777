package locktest

import (
	"context"

	"github.com/go-rlock/rlock/lockmw"
)

// Skips is a Client option whose Skip hook reports every skip an adapter
// reports (lockmw.Client.ReportSkip) on the returned channel, which holds
// 100 before a report blocks.
func Skips() (lockmw.Option, <-chan lockmw.SkipEvent) {
	events := make(chan lockmw.SkipEvent, 100)
	return lockmw.WithHooks(lockmw.Hooks{
		Skip: func(_ context.Context, ev lockmw.SkipEvent) { events <- ev },
	}), events
}
