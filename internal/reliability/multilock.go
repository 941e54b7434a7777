package reliability

import "context"

// SendTimesOf returns the SendTimes that ctx carries (see WithSendTimes), or
// nil. A lockmw hook reads it to learn when the last script of the
// acquisition it reports was sent: the crash workload of multi-locks, whose
// members are acquired one after another with one context, logs each
// member's.
func SendTimesOf(ctx context.Context) *SendTimes {
	s, _ := ctx.Value(sendTimesKey{}).(*SendTimes)
	return s
}
