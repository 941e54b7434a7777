package benchmeter

import (
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
)

// A Ground is the network between a benchmark's clients and its server.
type Ground struct {
	Name    string        // for the sub-benchmark: "loopback", "500us"
	Latency time.Duration // each way; 0: loopback, no proxy
}

// Grounds are the grounds the adapters' benchmarks run on: loopback, and
// through a faultproxy delaying each direction by 500 µs (a PING of about
// 1.2 ms, a network between zones).
var Grounds = []Ground{{"loopback", 0}, {"500us", 500 * time.Microsecond}}

// Addr returns the address at which clients reach srv on g: srv's own on
// loopback, else a faultproxy's with g's latency each way, closed at the end
// of the benchmark.
func (g Ground) Addr(b *testing.B, srv *redistest.Server) string {
	b.Helper()
	if g.Latency <= 0 {
		return srv.Addr()
	}
	p, err := faultproxy.Start(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	p.SetRequestLatency(g.Latency)
	p.SetLatency(g.Latency)
	return p.Addr()
}
