package lockmw

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// lateCtx has a deadline that has passed but, like a context whose timer
// has not fired yet, reports no error.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestWithCtxErr(t *testing.T) {
	ioTimeout := os.ErrDeadlineExceeded // what a socket read past its deadline returns
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	stop := errors.New("stop initiated")
	caused, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(stop)
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want []error
	}{
		{"no error stays none", lateCtx{context.Background()}, nil, nil},
		{"a live context adds nothing", context.Background(), ioTimeout, []error{ioTimeout}},
		{"a passed deadline its timer has not reported yet is joined", lateCtx{context.Background()}, ioTimeout, []error{ioTimeout, context.DeadlineExceeded}},
		{"a cancelled context is joined", canceled, ioTimeout, []error{ioTimeout, context.Canceled}},
		{"an error that already says so is kept as it is", canceled, context.Canceled, []error{context.Canceled}},
		{"a cause the error lacks is joined", caused, context.Canceled, []error{context.Canceled, stop}},
		{"a network error gets the context's error and its cause", caused, ioTimeout, []error{ioTimeout, context.Canceled, stop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withCtxErr(tt.ctx, tt.err)
			if tt.want == nil {
				assert.NoError(t, got)
				return
			}
			for _, w := range tt.want {
				assert.ErrorIs(t, got, w)
			}
			if len(tt.want) == 1 {
				assert.Same(t, tt.err, got, "not wrapped")
			}
		})
	}
	assert.False(t, errors.Is(withCtxErr(context.Background(), ioTimeout), context.DeadlineExceeded))
}
