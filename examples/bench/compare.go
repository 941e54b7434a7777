package main

import (
	"fmt"
	"strings"
	"time"
)

// rlock's contended targets, judged against its own figures and the other
// locks' rows of the same invocation (all on the same redis-server).
const (
	handoffPingTarget = 2.5 // hand-off p50 (from the Unlock call) / PING p50 during the run
	peerThroughput    = 1.4 // acquisitions/s against the best peer's
	idealThroughput   = 0.9 // acquisitions/s against 1/(hold + PING p50)
	pollCPUTarget     = 2.0 // redis-server CPU per acquisition against the poll lock's
	cmdsPerAcqTarget  = 4.0 // client commands per acquisition
	fairnessTarget    = 3.0 // max/min acquisitions per worker
)

// compareContended returns the line of rlock's contended targets, or nil
// when rlock's contended row is not among rows. A peer row without a
// hand-off (a lock one worker kept) is left out of the comparisons.
func compareContended(rows []*result) *result {
	var rl *result
	var peers []*result
	for _, r := range rows {
		switch {
		case r.Scenario != "contended" || r.Skipped != "":
		case r.Lock == "rlock":
			rl = r
		case r.Metrics["handoffs"] > 0:
			peers = append(peers, r)
		}
	}
	if rl == nil {
		return nil
	}
	m := rl.Metrics
	r := newResult("compare", "rlock")
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.Lock
	}
	r.param("against", strings.Join(names, ","))
	ratio := m["handoff_p50_us"] / max(m["ping_p50_us"], 0.1)
	r.num("handoff_p50_over_ping_p50", "hand-off p50/PING p50=%.2f", ratio)
	r.atMost(fmt.Sprintf("hand-off p50<=%.1f×PING", handoffPingTarget), ratio, handoffPingTarget)
	if best := bestPeer(peers, "handoff_p50_us", false); best != nil {
		r.below(fmt.Sprintf("hand-off p50<every peer's (best %s %s)", best.Lock, usDur(best.Metrics["handoff_p50_us"])),
			m["handoff_p50_us"], best.Metrics["handoff_p50_us"])
	}
	if best := bestPeer(peers, "handoff_p99_us", false); best != nil {
		r.below(fmt.Sprintf("hand-off p99<every peer's (best %s %s)", best.Lock, usDur(best.Metrics["handoff_p99_us"])),
			m["handoff_p99_us"], best.Metrics["handoff_p99_us"])
	}
	ideal := 1e6 / (m["hold_mean_us"] + m["ping_p50_us"])
	want, why := idealThroughput*ideal, fmt.Sprintf("%.1f/(hold+PING)", idealThroughput)
	if best := bestPeer(peers, "acquisitions_per_sec", true); best != nil && peerThroughput*best.Metrics["acquisitions_per_sec"] < want {
		want, why = peerThroughput*best.Metrics["acquisitions_per_sec"], fmt.Sprintf("%.1f×%s's", peerThroughput, best.Lock)
	}
	r.num("acquisitions_per_sec_wanted", "acq/s wanted=%.0f", want)
	r.atLeast(fmt.Sprintf("acq/s>=%s (%.0f)", why, want), m["acquisitions_per_sec"], want)
	for _, p := range peers {
		if p.Lock == "poll" {
			r.atMost(fmt.Sprintf("redis CPU/acq<=%.0f×poll's", pollCPUTarget), m["redis_cpu_us_per_acq"], pollCPUTarget*p.Metrics["redis_cpu_us_per_acq"])
		}
	}
	r.atMost(fmt.Sprintf("cmds/acq<=%.0f", cmdsPerAcqTarget), m["client_cmds_per_acq"], cmdsPerAcqTarget)
	fair := m["acq_per_worker_max_over_min"]
	if fair < 0 { // a worker got none: round wrote -1 for +Inf
		fair = fairnessTarget + 1
	}
	r.atMost(fmt.Sprintf("max/min<=%.0f", fairnessTarget), fair, fairnessTarget)
	return r
}

// bestPeer is the peer with the highest (most) or lowest value of key.
func bestPeer(peers []*result, key string, most bool) *result {
	var best *result
	for _, p := range peers {
		v := p.Metrics[key]
		if best == nil || (most && v > best.Metrics[key]) || (!most && v < best.Metrics[key]) {
			best = p
		}
	}
	return best
}

// usDur formats a figure in µs as a duration.
func usDur(us float64) string { return fmtDur(time.Duration(us * 1e3)) }
