// Package reliability is rlock's fault suite: it breaks things around lockmw
// (processes, Redis, the network, the input) and checks that the lock keeps
// its promises. Nothing lost, nothing double-held.
//
// The suite is in this package's tests (see the README, section "Reliability"):
//
//   - crash_test.go: several worker processes (./worker, package
//     crashworker on go-redis; -worker runs another client's: the modules
//     lockmw/rueidisrlock and lockmw/valkeyrlock run
//     TestCrashMutualExclusion with theirs) contend on a few names while a
//     driver SIGKILLs holders and starts replacements; every
//     critical section is logged as [Record]s and a checker proves that no
//     two holds of a name overlapped, that fencing tokens increased, and how
//     soon a dead holder's lock was free again; crashsem_test.go does the
//     same with semaphores (never more holds than permits). A sampler of what
//     Redis holds (lockstate_test.go) lets the test explain its slowest
//     recoveries and where slow hand-offs' time went (causes_test.go), and
//     count holds won by requests in flight when their process was killed;
//     every client reaches each redis-server through a fault proxy of its
//     own (netfaults_test.go), and each run draws its faults from a printed
//     seed (faults_test.go): kills of holders and waiters and paused
//     holders, and in a soak (make soak) Redis paused or restarted with its
//     append-only file and the proxy's latency, lost replies and black
//     hole besides; with -faults the proxies add latency and lost replies
//     all along;
//   - pause_test.go: a holder process frozen with SIGSTOP past its watchdog
//     timeout loses the lock, learns it when it wakes, and its fenced write
//     is rejected by [GuardedWrite];
//   - server_test.go: redis-server restarted and paused under held and
//     waited-for locks;
//   - network_test.go: latency, black-holed replies, resets and lost replies
//     between client and server, through internal/faultproxy;
//   - badinput_test.go: every public entry point of lockmw with input that
//     is wrong or at an edge;
//   - regressions_test.go: the lockmw bugs the suite found, now fixed.
//
// The fuzz targets for lock names and durations are in lockmw/fuzz_test.go.
//
// The non-test code here is what the worker program (package crashworker)
// and the tests share: the log record format, the send-time recorders
// (SendTimes, ScriptSends; SendHook for go-redis, SendRecorder for any
// client) and the guarded resource; and the porcupine model of the locks
// (linearize.go, searched per name and epoch: epochs.go), which every crash
// scenario checks its history with beside its own checker.
package reliability
