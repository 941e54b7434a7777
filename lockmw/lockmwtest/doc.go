// Package lockmwtest gives tests a lockmw.Client on an in-process Redis, so
// that code which takes locks can be unit-tested without a server.
//
// The Redis is miniredis (github.com/alicebob/miniredis/v2) with TTLs that
// follow the wall clock, so leases expire and the watchdog renews as it does
// on a real server. Its limits, honestly:
//
//   - one node only: no cluster, no sharded pub/sub (SPUBLISH), no replicas,
//     so WithReplicaSync and cluster behaviour cannot be tested with it;
//   - no faults: it does not pause, fail over or lose replies;
//   - Lua runs on gopher-lua, not Redis's Lua 5.1, and miniredis implements a
//     subset of commands; rlock's scripts run on it, but timing and memory
//     figures mean nothing.
//
// For anything about failure, timing or topology, test against a real
// redis-server.
package lockmwtest
