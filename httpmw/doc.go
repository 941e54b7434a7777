// Package httpmw will provide net/http middleware that serializes requests
// per route or per resource (a key derived from the request) across all
// instances of a service with an rlock lock, waiting up to a deadline for
// the lock and answering with an error status when it cannot be taken.
//
// Not implemented yet: this package is a placeholder.
package httpmw
