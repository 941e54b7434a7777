// Package scheduler will connect rlock to gocron v2
// (github.com/go-co-op/gocron/v2): a gocron.Locker, so that each run of a
// job executes on one instance of a fleet only, and a gocron.Elector, so that
// one instance is the leader that runs all jobs, with leadership held by a
// renewed rlock lock and handed over when the leader stops or loses it.
//
// Not implemented yet: this package is a placeholder.
package scheduler
