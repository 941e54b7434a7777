package reliability_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The explanation of a slow recovery names what held the name: here pid 1
// is killed holding "a"; as its key expires, pid 2's retry wins it, but pid
// 2 was killed with the request in flight; its key runs out, and the
// driver's sampler heard nothing for 100 ms meanwhile; then pid 3 takes it.
func TestExplainNamesTheCauses(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	ms := time.Millisecond
	smp := &sampler{changes: map[string][]lockState{"a": {
		{at: at(90), holders: []string{"c1:1"}, ttls: []time.Duration{910 * ms}, queue: []string{"c2:7", "c3:9"}},
		{at: at(1092), queue: []string{"c2:7", "c3:9"}},
		{at: at(1101), holders: []string{"c2:7"}, ttls: []time.Duration{998 * ms}, queue: []string{"c3:9"}},
		{at: at(2104), queue: []string{"c3:9"}},
		{at: at(2109), holders: []string{"c3:9"}, ttls: []time.Duration{timeout}},
	}}, stalls: []stall{{at(1500), at(1600)}}}
	recs := append(helloClients(1, 2, 3),
		startField(1, "a", 1, 0, "c1:1"),
		reliability.Record{Kind: reliability.Call, Pid: 2, Name: "a", Time: at(50)},
		startField(3, "a", 3, 2110, "c3:9"), rec(reliability.End, 3, "a", 3, 2120))
	kills := []kill{{pid: 1, at: at(100)}, {pid: 2, at: at(1099)}}
	rep := check(recs, kills, timeout, at(10_000), driverObserved{&driver{smp: smp}})
	require.Empty(t, rep.Violations)
	assert.Equal(t, 1, rep.Phantoms)
	require.Len(t, rep.recovered, 2)

	e := newExplainer(rep.run, kills, smp, 0, timeout)
	slowest := strings.Join(e.explain(rep.recovered[0]), "\n")
	assert.Contains(t, slowest, `"a" acquired again 1.011s after pid 2 was killed`)
	assert.Contains(t, slowest, "killed hold: never logged; Redis gave it the name at +2ms at the latest")
	assert.Contains(t, slowest, "+401ms to +501ms: no sample (the driver or redis-server did not run)")
	assert.Contains(t, slowest, "causes: the previous hold's key 903ms; the machine stalled 100ms; the name lay free (waiters asleep) 7ms; the next hold, before it was logged 1ms")
	first := strings.Join(e.explain(rep.recovered[1]), "\n")
	assert.Contains(t, first, "next hold: pid 2's, never logged: it was killed +999ms with its acquisition in flight, Redis held it from +1001ms at the latest")
	assert.Contains(t, first, "died waiting for it: pid 2 (killed +999ms)")
	assert.Contains(t, first, "+1001ms: held by pid 2 (dead) (ttl 998ms); queue: pid 3")
}
