package testsupport

import "sync/atomic"

// Peak counts how many of something (handlers of one key, say) run at once,
// and keeps the most that ever did. The zero value is ready; its methods are
// safe for concurrent use.
type Peak struct {
	cur, max atomic.Int32
}

// Enter counts one more running.
func (p *Peak) Enter() {
	n := p.cur.Add(1)
	for {
		old := p.max.Load()
		if n <= old || p.max.CompareAndSwap(old, n) {
			return
		}
	}
}

// Leave counts one fewer running.
func (p *Peak) Leave() { p.cur.Add(-1) }

// Now is how many run now.
func (p *Peak) Now() int { return int(p.cur.Load()) }

// Max is the most that ran at once so far.
func (p *Peak) Max() int { return int(p.max.Load()) }
