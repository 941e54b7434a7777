// Package skip is how the adapters report the work they did not run (a
// request, an RPC, a task, a job's run) to the lockmw.Client's Skip hooks
// (lockmw.Hooks.Skip, otelhooks' lock.skips): one classification of the
// error that kept a lock from being taken, shared by every adapter, so that
// a reason means the same whichever adapter counted it.
package skip
