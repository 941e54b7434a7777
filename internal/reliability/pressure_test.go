package reliability_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuWaited returns how long, in all, some task of the machine has waited
// for a CPU since boot (Linux's pressure stall information,
// /proc/pressure/cpu, "some ... total="), and false where the kernel does
// not tell. Over a run, its growth divided by the run's length is the share
// of the time a loaded machine kept some runnable process off the CPU.
func cpuWaited() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err == nil
			}
		}
	}
	return 0, false
}
