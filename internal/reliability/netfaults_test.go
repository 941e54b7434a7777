//go:build unix

package reliability_test

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/layout"
	"github.com/stretchr/testify/require"
)

const (
	// faultLatency is the fault proxy's delay in each direction: a round
	// trip of about 1 ms more than loopback's, a server in the same zone.
	faultLatency = 500 * time.Microsecond
	// faultDropOneIn: the proxy loses the reply of one lock command
	// (a script or a RESTORE) in this many, chosen at random.
	faultDropOneIn = 500
)

// netFaults is the fault proxy between every client of a crash run and
// redis-server (the driver's sampler aside): latency both ways, and lost
// replies of lock commands, each recorded with the names it touched.
type netFaults struct {
	p *faultproxy.Proxy

	mu    sync.Mutex
	drops []drop
}

// drop is one reply the proxy lost.
type drop struct {
	at    time.Time // when the proxy read it from the server: the command had run
	cmd   string
	names []string // the lock names among its keys
}

// startFaults starts a fault proxy to addr for names; it is closed at the
// end of the test.
func startFaults(t *testing.T, addr string, names []string) *netFaults {
	p, err := faultproxy.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	f := &netFaults{p: p}
	// A script's keys name the lock; a semaphore's renewal names its
	// permits' key.
	known := make(map[string]string)
	for _, n := range names {
		known[n] = n
		known[layout.Semaphore(n).Permits] = n
	}
	p.SetLatency(faultLatency)
	p.SetRequestLatency(faultLatency)
	p.SetRule(func(c faultproxy.Command) faultproxy.Action {
		keys := lockKeys(c)
		if keys == nil || rand.IntN(faultDropOneIn) != 0 {
			return faultproxy.Forward
		}
		d := drop{at: time.Now(), cmd: c.Name}
		for _, k := range keys {
			if n, ok := known[k]; ok {
				d.names = append(d.names, n)
			}
		}
		f.mu.Lock()
		f.drops = append(f.drops, d)
		f.mu.Unlock()
		return faultproxy.Drop
	})
	return f
}

// lockKeys returns the keys of a lock command (EVALSHA, EVAL, RESTORE): the
// first key of a lockmw script is the lock's name (a renewal's keys are the
// names it renews); nil for any other command.
func lockKeys(c faultproxy.Command) []string {
	switch c.Name {
	case "evalsha", "eval":
		if len(c.Args) < 2 {
			return nil
		}
		n, err := strconv.Atoi(c.Args[1])
		if err != nil || n < 0 || len(c.Args) < 2+n {
			return nil
		}
		return c.Args[2 : 2+n]
	case "restore":
		if len(c.Args) < 1 {
			return nil
		}
		return c.Args[:1]
	}
	return nil
}

// dropsOn returns how many replies of commands on name were lost in
// (from, to).
func (f *netFaults) dropsOn(name string, from, to time.Time) int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, d := range f.drops {
		if !d.at.After(from) || !d.at.Before(to) {
			continue
		}
		for _, dn := range d.names {
			if dn == name {
				n++
				break
			}
		}
	}
	return n
}

// count returns how many replies were lost.
func (f *netFaults) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.drops)
}
