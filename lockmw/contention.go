package lockmw

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// contentionMemory is how long a name stays on the acquire and release
// scripts after contention was seen on it (a busy attempt, or waiters found
// by the short release).
const contentionMemory = 10 * time.Second

// contention remembers, per group of names (a hash of the name picks one of
// 256), when this Client last saw contention on one of them. A name whose
// group saw none for contentionMemory takes the fast path. Two names that
// share a group only lose the fast path together.
type contention struct {
	seed  maphash.Seed
	start time.Time
	last  [256]atomic.Int64 // ns since start, + 1; 0: never
}

// newContention returns an empty contention memory.
func newContention() *contention {
	return &contention{seed: maphash.MakeSeed(), start: time.Now()}
}

// slot is the group of name.
func (c *contention) slot(name string) *atomic.Int64 {
	return &c.last[maphash.String(c.seed, name)&255]
}

// seen records contention on the group s now.
func (c *contention) seen(s *atomic.Int64) { s.Store(int64(time.Since(c.start)) + 1) }

// recent reports whether the group s saw contention within contentionMemory.
func (c *contention) recent(s *atomic.Int64) bool {
	t := s.Load()
	return t != 0 && time.Since(c.start)-time.Duration(t-1) < contentionMemory
}
