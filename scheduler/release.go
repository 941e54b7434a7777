package scheduler

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/internal/unlockretry"
	"github.com/go-rlock/rlock/lockmw"
)

// retry is the back-off of a release retried after a Redis error: until it
// succeeds, the key is found expired or the lockmw.Client closes.
var retry = unlockretry.Policy{First: 50 * time.Millisecond, Max: 2 * time.Second}

// release gives up the hold: at once, or at at when that is still to come.
//
// When Redis fails, lockmw stops renewing the hold (so the key expires within
// its TTL) but leaves it in Redis until then: a job of another instance, or
// the next leader, would wait that long. So release returns the error and
// retries in the background (unlockretry) until the release succeeds, the
// hold is found lost (the key expired meanwhile), or the lockmw.Client is
// closed (done). end runs once the hold is over.
func release(m *lockmw.Mutex, hold context.Context, at time.Time, end func(), done <-chan struct{}) error {
	return unlockretry.Do(hold, func() error {
		if time.Now().Before(at) {
			return m.UnlockAt(hold, at)
		}
		return m.Unlock(hold)
	}, done, retry, end)
}
