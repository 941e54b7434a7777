// Package unexported is a golden case: an unexported interface gets an
// unexported constructor.
package unexported

import "context"

type billing interface {
	//rlock:lock key="job"
	run(ctx context.Context) error
}
