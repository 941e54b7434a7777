// Package otelhooks will instrument rlock with OpenTelemetry
// (go.opentelemetry.io/otel): spans for acquiring and holding a lock, and
// metrics for lock wait time, hold time, watchdog renewals and lost locks.
//
// Not implemented yet: this package is a placeholder.
package otelhooks
