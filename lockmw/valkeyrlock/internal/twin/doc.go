// Package twin holds the test that generates lockmw/valkeyrlock's files from
// lockmw/rueidisrlock's and fails when they differ (twin_test.go): the two
// modules are one source with two clients' names.
package twin
