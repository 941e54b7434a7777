package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// With -latency every client of the run goes through the proxy: whatever
// the lock, a hand-off (the release reaches the server, the next holder
// hears of it) and a Lock call (at least one command and its reply) take at
// least a round trip of the added delay, and so does the pinger's PING.
func TestLatencyPutsAProxyBeforeEveryClient(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Millisecond
	rtt := float64((2 * d).Microseconds())
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.latency = d
	cfg.scenarios = []string{"contended", "mixed"}
	cfg.locks = []string{"rlock", "poll"}
	cfg.mixes = []mix{{1, 1}}
	rep := runJSON(t, cfg)

	m := rep.Machine
	if want := "through faultproxy, 2ms each way; PING p50 "; !strings.HasPrefix(m.Ground, want) || m.LatencyUs != 2000 || m.PingP50Us < rtt {
		t.Errorf("ground %q, latency %vµs, PING p50 %vµs: want %q…, 2000µs, at least %vµs", m.Ground, m.LatencyUs, m.PingP50Us, want, rtt)
	}
	for _, lock := range []string{"rlock", "poll"} {
		r := find(t, rep, "contended", lock).Metrics
		if r["ping_p50_us"] < rtt || r["ping_before_p50_us"] < rtt {
			t.Errorf("%s: PING p50 during %vµs, before %vµs: want at least %vµs", lock, r["ping_p50_us"], r["ping_before_p50_us"], rtt)
		}
		if r["handoffs"] > 0 && r["handoff_p50_us"] < rtt {
			t.Errorf("%s: hand-off p50 %vµs, want at least %vµs", lock, r["handoff_p50_us"], rtt)
		}
	}
	r := find(t, rep, "mixed", "rlock").Metrics
	for _, side := range []string{"rlock", "redisson"} {
		if w := r[side+"_wait_p50_us"]; r[side+"_holds"] > 0 && w < rtt {
			t.Errorf("mixed, %s side: wait p50 %vµs, want at least %vµs", side, w, rtt)
		}
	}
}
