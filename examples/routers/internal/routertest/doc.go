// Package routertest holds what the router examples' tests share: a test
// server, a request that reports what came back, a gauge of handlers running
// at once, a barrier that proves two handlers overlap, and a log buffer.
package routertest
