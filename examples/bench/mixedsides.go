package main

import (
	"fmt"
	"slices"
	"time"
)

// sideStats is what one side of the mixed scenario got.
type sideStats struct {
	holds int
	// gap is the longest time the side went without a hold: from the start,
	// or from one of its holds' release (Unlock returned), to its next
	// acquisition (Lock returned), or to the end of the run.
	gap     time.Duration
	gapOpen bool            // the longest gap ran to the end of the run
	waits   []time.Duration // Lock called → returned, sorted; a Lock still waiting at the end counts to the end
}

// sideOf computes side's figures from the turns of the workers on it.
func sideOf(side string, workers []mixedWorker, turns [][]turn, end time.Duration) sideStats {
	var st sideStats
	var held []turn
	for i, w := range workers {
		if w.side != side {
			continue
		}
		for _, t := range turns[i] {
			switch {
			case t.acquired < 0 || t.acquired >= end:
				st.waits = append(st.waits, end-min(t.called, end))
			default:
				st.waits = append(st.waits, t.acquired-t.called)
				held = append(held, t)
			}
		}
	}
	slices.SortFunc(held, func(a, b turn) int { return int(a.acquired - b.acquired) })
	var last time.Duration // release of the side's latest hold
	for _, t := range held {
		st.gap = max(st.gap, t.acquired-last)
		last = max(last, t.released)
	}
	if end-last >= st.gap {
		st.gap, st.gapOpen = end-last, true
	}
	st.holds = len(held)
	sorted(st.waits)
	return st
}

// acquiredBy is every turn acquired before end, in the order acquired.
func acquiredBy(turns [][]turn, end time.Duration) []turn {
	var all []turn
	for _, ts := range turns {
		for _, t := range ts {
			if t.acquired >= 0 && t.acquired < end {
				all = append(all, t)
			}
		}
	}
	slices.SortFunc(all, func(a, b turn) int { return int(a.acquired - b.acquired) })
	return all
}

// overlaps counts holds that began before the previous holder called
// Unlock: two owners held the lock at once.
func overlaps(turns [][]turn, end time.Duration) int {
	all := acquiredBy(turns, end)
	n := 0
	for i := 1; i < len(all); i++ {
		if all[i].acquired < all[i-1].unlockCall {
			n++
		}
	}
	return n
}

// holdsPerWorker is the breakdown of holds by worker ("rlock-0", ...).
func holdsPerWorker(workers []mixedWorker, turns [][]turn, end time.Duration) map[string]float64 {
	out := map[string]float64{}
	seen := map[string]int{}
	for i, w := range workers {
		n := 0
		for _, t := range turns[i] {
			if t.acquired >= 0 && t.acquired < end {
				n++
			}
		}
		out[fmt.Sprintf("%s-%d", w.side, seen[w.side])] = float64(n)
		seen[w.side]++
	}
	return out
}
