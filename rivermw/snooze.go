package rivermw

import (
	"encoding/json"
	"math/rand/v2"
	"time"
)

// jitter returns a delay drawn uniformly from [d, 1.5d).
func jitter(d time.Duration) time.Duration {
	if half := d / 2; half > 0 {
		return d + rand.N(half)
	}
	return d
}

// snoozeCount is how often River has snoozed the job whose metadata this
// is: the "snoozes" number River keeps there, 0 when absent. Metadata that
// River could not have written (not an object, "snoozes" not a number)
// counts as 0.
func snoozeCount(metadata []byte) int64 {
	var md struct {
		Snoozes float64 `json:"snoozes"`
	}
	if json.Unmarshal(metadata, &md) != nil {
		return 0
	}
	return int64(md.Snoozes)
}
