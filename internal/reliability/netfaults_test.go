//go:build unix

package reliability_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// netFaults is the fault proxies between every client of a crash run and
// its redis-servers (the driver's sampler aside), one before each server:
// with -faults, latency both ways and lost replies of lock commands all
// along (the base); the faults the driver draws (faults_test.go) raise the
// latency, lose replies more often or black-hole one proxy for a while.
// Every lost reply is recorded with the names it touched.
type netFaults struct {
	ps   []*faultproxy.Proxy
	base bool // -faults
	// dropOneIn, per proxy: it loses the reply of one lock command in
	// this many, chosen at random (0: none).
	dropOneIn []atomic.Int64

	mu    sync.Mutex
	drops []drop
}

// drop is one reply the proxy lost.
type drop struct {
	at    time.Time // when the proxy read it from the server: the command had run
	cmd   string
	names []string // the lock names among its keys
}

// startFaults starts a fault proxy to each of addrs for names, with the base
// faults when base is set; they are closed at the end of the test.
func startFaults(t *testing.T, addrs []string, names []string, base bool) *netFaults {
	f := &netFaults{base: base, dropOneIn: make([]atomic.Int64, len(addrs))}
	// A script's keys name the lock; a semaphore's renewal names its
	// permits' key.
	known := make(map[string]string)
	for _, n := range names {
		known[n] = n
		known[layout.Semaphore(n).Permits] = n
	}
	for i, addr := range addrs {
		p, err := faultproxy.Start(addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		f.ps = append(f.ps, p)
		f.setLatency(i, f.baseLatency())
		f.dropOneIn[i].Store(f.baseDropOneIn())
		p.SetRule(func(c faultproxy.Command) faultproxy.Action {
			keys := lockKeys(c)
			n := f.dropOneIn[i].Load()
			if keys == nil || n == 0 || rand.Int64N(n) != 0 {
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
	}
	return f
}

// addr is what the clients dial: the proxies' addresses, comma-separated
// (a quorum's masters).
func (f *netFaults) addr() string {
	addrs := make([]string, len(f.ps))
	for i, p := range f.ps {
		addrs[i] = p.Addr()
	}
	return strings.Join(addrs, ",")
}

// baseLatency is the latency each way all along: faultLatency with -faults.
func (f *netFaults) baseLatency() time.Duration {
	if f.base {
		return faultLatency
	}
	return 0
}

// baseDropOneIn is how often a reply is lost all along: one in
// faultDropOneIn with -faults, none otherwise.
func (f *netFaults) baseDropOneIn() int64 {
	if f.base {
		return faultDropOneIn
	}
	return 0
}

// setLatency sets proxy i's latency each way.
func (f *netFaults) setLatency(i int, d time.Duration) {
	f.ps[i].SetLatency(d)
	f.ps[i].SetRequestLatency(d)
}

// stats is the proxies' counters, summed.
func (f *netFaults) stats() faultproxy.Stats {
	var st faultproxy.Stats
	for _, p := range f.ps {
		s := p.Stats()
		st.Conns += s.Conns
		st.Commands += s.Commands
		st.Replies += s.Replies
		st.Dropped += s.Dropped
		st.Resets += s.Resets
	}
	return st
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
