package crashworker

import (
	"math/rand/v2"

	"github.com/go-rlock/rlock/lockmw"
)

// rwWritePercent is how many of the crash-rw holds are write holds.
const rwWritePercent = 20

// rwLocker returns the Locker of a crash-rw hold of a name: the read side
// of its fenced read-write lock (RLocker) four times in five, the write
// side otherwise. A hold's side is told in the log by its token: the write
// side's fencing token, or the negative number of a hold with none, a
// read hold (the checker's isRead).
func rwLocker(c *lockmw.Client) func(name string) lockmw.Locker {
	return func(name string) lockmw.Locker {
		rw := c.RWMutex(name, lockmw.WithFencing())
		if rand.IntN(100) < rwWritePercent {
			return rw
		}
		return rw.RLocker()
	}
}
