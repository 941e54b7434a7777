// Package asynqmw will provide asynq (github.com/hibiken/asynq) middleware
// built on rlock: single flight, so that at most one task with a given key
// runs at a time across all workers, and deduplication per task key, so that
// a task whose key is already being processed is dropped or retried later
// instead of running twice.
//
// Not implemented yet: this package is a placeholder.
package asynqmw
