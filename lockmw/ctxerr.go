package lockmw

import (
	"context"
	"errors"
	"time"
)

// ctxErr returns ctx's error, joined with its cause when that says more, or
// context.DeadlineExceeded when ctx's deadline has passed although ctx does
// not report it yet. go-redis (with ContextTimeoutEnabled) sets a socket's
// deadline from ctx's, so a read can fail with an i/o timeout a moment
// before ctx's own timer fires: the caller must still see that its
// deadline ended the call.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != err {
			return errors.Join(err, cause)
		}
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// withCtxErr joins a failed call's err with ctxErr(ctx), unless err already
// carries a context error: a context error is never swallowed by a network
// one. An err that carries ctx's error but not its cause (go-redis returns
// ctx.Err()) gets the cause joined: a context cancelled with a cause
// (context.WithCancelCause, as River's StopAndCancel does) matches both.
func withCtxErr(ctx context.Context, err error) error {
	if err == nil {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
			return errors.Join(err, cause)
		}
		return err
	}
	if cerr := ctxErr(ctx); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}
