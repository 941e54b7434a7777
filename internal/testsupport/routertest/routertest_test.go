package routertest_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/testsupport/routertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheBarrierLetsTwoOverlappingHandlersThrough(t *testing.T) {
	s := routertest.Serve(t, routertest.NewBarrier(2))
	routertest.AllOK(t, routertest.SendAsync(t.Context(), s, "GET", "/a"), routertest.SendAsync(t.Context(), s, "GET", "/b"))
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
