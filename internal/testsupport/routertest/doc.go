// Package routertest holds what the HTTP router tests share — httpmw's, the
// router modules' (ginmw, echomw, echo5mw, fibermw) and examples/routers':
// a test server, a request that reports what came back, a gauge of handlers
// running at once and a barrier that proves handlers overlap.
//
// It speaks net/http only; a router module adapts the gauge and the barrier
// to its own handler type in a line or two. The log buffer the same tests
// read is testsupport.LogBuffer, and what a test does to a lock from outside
// (hold it, count its queue) is in locktest.
package routertest
