package testsupport

import (
	"context"
	"testing"
	"time"
)

// hangLimit bounds the context of [Ctx].
const hangLimit = 2 * time.Minute

// Ctx returns a context that ends after 2 minutes or when the test is cleaned
// up. It is a safety net against a hung test, not a time limit: parallel
// subtests may wait their turn long after it was made.
func Ctx(t testing.TB) context.Context {
	return CtxFor(t, hangLimit)
}

// CtxFor returns a context that ends after d or when the test is cleaned up,
// whichever comes first. Unlike t.Context, it is still live in the clean-up
// functions registered after it was made.
func CtxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
