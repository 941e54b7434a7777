package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/lockmw"
)

func TestSkipReasonOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want lockmw.SkipReason
	}{
		{&lockmw.BusyError{Name: "a"}, lockmw.SkipBusy},
		{errors.Join(&lockmw.BusyError{Name: "a"}, context.Canceled), lockmw.SkipBusy},
		{errors.Join(lockmw.ErrNotAcquired, errors.New("dial tcp: connection refused")), lockmw.SkipFailed},
		{fmt.Errorf("x: %w", lockmw.ErrInvalidName), lockmw.SkipRefused},
		{lockmw.ErrUpgrade, lockmw.SkipRefused},
		{errors.ErrUnsupported, lockmw.SkipRefused},
		{lockmw.ErrInvalidArgument, lockmw.SkipRefused},
		{lockmw.ErrClosed, lockmw.SkipFailed},
		{context.DeadlineExceeded, lockmw.SkipFailed},
		{errors.New("redis: connection refused"), lockmw.SkipFailed},
	} {
		t.Run(tc.err.Error()+" is "+tc.want.String(), func(t *testing.T) {
			assert.Equal(t, tc.want, lockmw.SkipReasonOf(tc.err))
		})
	}
}
