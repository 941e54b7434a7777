package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTheExamplePrintsWhatItsDocSays runs the example against a real
// redis-server, twice: a second run on the same data prints the same.
func TestTheExamplePrintsWhatItsDocSays(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	want := `== Charge: eight calls on order-7 at once, one on order-8
order-7: 8 receipts, 1 new; the payment provider was called 1 time(s)
order-8: the payment provider was called 1 time(s)

== Refund: the key is billing:refund#{o.ID}
refunded order-7
a nil order: lockmw: invalid argument: Billing.Refund: key reference {o.ID}: nil pointer or interface (errors.Is ErrInvalidArgument: true)

== Quote: no directive, no lock
order-7 costs 700
`
	for range 2 {
		var out strings.Builder
		require.NoError(t, run(ctx, &out, srv.Client()))
		assert.Equal(t, want, out.String())
	}
}
