//go:build !race

package lockmw_test

// raceEnabled says the test binary runs under the race detector, which
// allocates on its own (TestLockUnlockAllocations).
const raceEnabled = false
