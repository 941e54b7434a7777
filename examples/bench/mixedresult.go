package main

import "fmt"

// mixedResult reports each side's holds, share, longest gap and waits, and
// the Redisson side's targets.
func mixedResult(cfg config, mx mix, workers []mixedWorker, turns [][]turn) *result {
	end := cfg.duration
	rl := sideOf("rlock", workers, turns, end)
	rs := sideOf("redisson", workers, turns, end)
	total := rl.holds + rs.holds

	r := newResult("mixed", "rlock")
	r.param("rlock", mx.rlock)
	r.param("redisson", mx.redisson)
	if cfg.slowWake {
		r.param("wake", "slow")
	}
	if cfg.mixedPermits > 0 {
		r.param("semaphore", cfg.mixedPermits)
	}
	r.param("hold", cfg.hold)
	r.param("think", fmt.Sprintf("0-%v", 2*cfg.think))
	r.param("duration", cfg.duration)
	r.num("holds", "holds=%.0f", float64(total))
	overlap := overlaps(turns, end)
	if cfg.mixedPermits > 0 {
		overlap = overHolders(turns, end, cfg.mixedPermits)
	}
	r.num("overlapping_holds", "overlapping=%.0f", float64(overlap))
	sideFigures(r, "rlock", rl, total, mx.rlock, mx.rlock+mx.redisson)
	rsShare := sideFigures(r, "redisson", rs, total, mx.redisson, mx.rlock+mx.redisson)
	r.Breakdown["holds_per_worker"] = holdsPerWorker(workers, turns, end)

	r.atMost(fmt.Sprintf("redisson gap<=%v", mixedGapTarget), rs.gap.Seconds(), mixedGapTarget.Seconds())
	r.atLeast(fmt.Sprintf("redisson share>=%.2f×fair", mixedShareTarget), rsShare, mixedShareTarget)
	r.atMost("no overlapping holds", float64(overlap), 0)
	return r
}

// sideFigures records one side's figures under keys prefixed with side and
// returns its share of the holds over its fair share, workers/all.
func sideFigures(r *result, side string, st sideStats, total, workers, all int) float64 {
	share := float64(st.holds) / float64(max(total, 1))
	fair := float64(workers) / float64(all)
	r.note("| %s:", side)
	r.num(side+"_holds", "holds=%.0f", float64(st.holds))
	r.num(side+"_share", "share=%.3f", share)
	r.num(side+"_fair_share", "(fair %.3f,", fair)
	r.num(side+"_share_over_fair", "%.2f×)", share/fair)
	r.dur(side+"_longest_gap", "longest gap", st.gap)
	r.Metrics[side+"_longest_gap_to_end"] = 0
	if st.gapOpen {
		r.Metrics[side+"_longest_gap_to_end"] = 1
		r.note("(to the end)")
	}
	r.dur(side+"_wait_p50", "wait p50", percentile(st.waits, 0.5))
	r.dur(side+"_wait_p99", "p99", percentile(st.waits, 0.99))
	r.dur(side+"_wait_max", "max", percentile(st.waits, 1))
	return share / fair
}
