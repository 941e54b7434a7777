package lockmw

import (
	"strconv"
	"time"
)

// expiryBound is the last moment a key given ttl by a request sent at sent is
// surely still there: sent + ttl, minus a margin for clock drift between this
// process and Redis (1% of ttl + 2ms, as Redlock's drift factor).
func (c *Client) expiryBound(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - ttl/100 - 2*time.Millisecond)
}

// formatUint formats n in decimal.
func formatUint(n uint64) string { return strconv.FormatUint(n, 10) }

// maxTTLms is the longest TTL rlock gives a key, 100 years: far enough to
// mean "never", small enough that the TTL still fits a time.Duration (the
// one PTTL returns) and Redis can add it to the current time.
const maxTTLms = int64(100 * 365 * 24 * time.Hour / time.Millisecond)

// msCeil converts d to whole milliseconds, rounding up, at least 1 and at
// most maxTTLms.
func msCeil(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return min(max(ms, 1), maxTTLms)
}
