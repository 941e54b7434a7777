package routertest_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheBarrierLetsTwoOverlappingHandlersThrough(t *testing.T) {
	s := routertest.Serve(t, routertest.NewBarrier(2))
	a, b := routertest.SendAsync(t.Context(), s, "GET", "/a"), routertest.SendAsync(t.Context(), s, "GET", "/b")
	for _, ch := range []<-chan routertest.Reply{a, b} {
		r := testsupport.Recv(t, ch, 2*routertest.Patience, "reply")
		require.NoError(t, r.Err)
		assert.Equal(t, http.StatusOK, r.Status, r.Body)
	}
}

func TestTheGaugeCountsHandlersInsideAtOnce(t *testing.T) {
	var g routertest.Gauge
	var wg sync.WaitGroup
	g.Enter() // one inside while three more come and go
	for range 3 {
		wg.Go(g.Work)
	}
	wg.Wait()
	g.Exit()
	peak, all := g.Peak()
	assert.Equal(t, 4, all)
	assert.GreaterOrEqual(t, peak, 2)
}
