// Package redistest runs real redis-server processes for tests.
//
// Every test in this module that talks to Redis uses this package instead of
// a fake: the lock is a set of Lua scripts and pub/sub messages, and only a
// real server gives their semantics (script atomicity, PEXPIRE, key-space
// events, cluster redirections, failover) with confidence.
//
// # Servers
//
// [Start] launches a standalone redis-server for a test and registers its
// shutdown with t.Cleanup; [Launch] does the same without a testing.TB (for
// tools such as the load generator), and the caller calls [Server.Close].
// Each server gets
//
//   - its own temporary directory (dir), removed by Close;
//   - a free loopback port (bind 127.0.0.1, protected-mode no), picked by
//     listening on 127.0.0.1:0; if another process grabs the port before
//     redis-server binds it, the launch is retried with a new port;
//   - no persistence (save "", appendonly no), so [Server.Restart] brings the
//     server back on the same port with an empty data set;
//   - its log (redis-server's stdout and stderr) in a file in that directory,
//     readable with [Server.LogTail]. When a test fails, Start logs the tail
//     with t.Log.
//
// Extra configuration is given as redis.conf directive lines, "name value",
// for example
//
//	srv := redistest.Start(t, "maxmemory 10mb", `notify-keyspace-events "Ex"`)
//
// or in [Config.Args] for Launch. The lines are appended to the generated
// redis.conf, so they can override the defaults (do not override port, bind,
// dir or the cluster settings).
//
// Readiness is detected by polling PING with a deadline; nothing in this
// package sleeps a fixed amount of time. The child process is started with
// Pdeathsig set to SIGKILL (Linux), so a redis-server does not outlive a test
// binary that crashes or is killed; [Server.Stop] and [Server.Close] reap the
// process, so no zombies are left behind either.
//
// Fault injection: [Server.Stop] and [Server.Restart] (process down / back
// with data gone), [Server.StartAgain] (back with what it persisted: with
// "appendonly yes" and "appendfsync always", every write it acknowledged,
// after a Stop or a Kill), [Server.Kill] (SIGKILL: a crash, no shutdown, no last
// replication), [Server.Pause] and [Server.Resume] (SIGSTOP/SIGCONT: the
// server accepts TCP connections, which the kernel queues, but answers
// nothing, which is what a GC pause, a VM freeze or a network partition
// looks like to a client).
//
// Clients returned by [Server.Client], [Server.NewClient] and
// [Cluster.Client] have ContextTimeoutEnabled set, so context deadlines bound
// every command, including a command sent to a paused server.
//
// # Clusters
//
// [StartCluster] (or [LaunchCluster]) starts masters+masters*replicasPerMaster
// cluster-enabled nodes on loopback with cluster-node-timeout 2000 ms (so
// failover tests are fast; the other cluster settings are Redis' defaults),
// splits the 16384 slots evenly over the masters with CLUSTER ADDSLOTSRANGE,
// joins the nodes with CLUSTER MEET, attaches Replicas[i] to
// Masters[i/replicasPerMaster] with CLUSTER REPLICATE, and waits (with a
// deadline) until every node reports cluster_state:ok, every node sees every
// replica attached to its master, and every replica's replication link is
// up. The cluster bus uses its own free port (cluster-port).
//
// Restarting a cluster node keeps its nodes.conf (its identity and view of
// the cluster) but not its data.
//
// # Changing a cluster
//
// Tests change a running cluster the way an operator or a crash would, and
// each change returns only once every running node agrees on the new slot
// owners and reports cluster_state:ok, so a test can go on at once:
//
//   - [Cluster.Failover] runs CLUSTER FAILOVER on a replica, coordinated
//     (""), "FORCE" or "TAKEOVER"; the old master ends as a replica of the
//     new one;
//   - [Cluster.KillMaster] kills a master with SIGKILL and waits until the
//     cluster has promoted its replica (about 3 to 5 s with
//     cluster-node-timeout 2000);
//   - [Cluster.MigrateSlot] moves one slot and its keys to another master
//     (IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE), so that
//     clients get MOVED, and ASK while it runs.
//
// [Slot] computes a key's hash slot (CRC16 with hash tags) locally;
// [Cluster.MasterFor], [Cluster.ReplicaOf], [Cluster.CurrentMasters] and
// [Cluster.NodeID] tell who is who now — Cluster.Masters and
// Cluster.Replicas keep the roles the nodes had when the cluster was formed.
//
// # Sentinel
//
// [StartSentinel] (or [LaunchSentinel]) starts a master, replicas replicas
// (replicaof the master) and sentinels sentinels (redis-server --sentinel)
// on loopback. The sentinels monitor the master as [SentinelMasterName] with
// quorum sentinels/2+1, down-after-milliseconds 500 and failover-timeout
// 3000 (the other settings are Redis' defaults); their configuration file
// is in their directory, where they rewrite it. The group is ready when the
// master sees every replica online, every replica's link is up, and every
// sentinel reports the master up, all the replicas with their link ok, and
// all the other sentinels (they announce themselves every 2 s, so this takes
// 2 to 3 s).
//
// [Sentinel.Client] is a go-redis failover client (redis.NewFailoverClient).
// [Sentinel.KillMaster] crashes the current master; [Sentinel.WaitFailover]
// waits until every sentinel names the same new master and it reports role
// master (2 to 4 s after the crash). With down-after-milliseconds 500, a
// master that does not answer for half a second — a paused one, or one
// starved of CPU — is failed over too.
//
// No process outlives a test: [Server.Close] (and so the Close of a
// Cluster or a Sentinel) reaps it, Pdeathsig kills it if the test binary dies,
// and this package's own tests check that the test binary has no child left
// when they end.
//
// # redis-server
//
// redis-server (7.0 or later) must be on PATH. If it is not, Start fails the
// test with one line saying so and Launch returns [ErrNotFound]; tests are
// never skipped silently. "make test" installs it on Debian and Ubuntu.
package redistest
