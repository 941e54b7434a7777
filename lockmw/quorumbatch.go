package lockmw

import (
	"context"
	"errors"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// runBatches runs the calls in one pipeline per master, all at once, and
// returns once a majority answered every call, or too few still can: a
// master not waited for has nil commands. A master with batchesInFlight
// batches not returned yet (one that does not answer) is skipped.
func (q *quorumStore) runBatches(ctx context.Context, s backend.Script, calls []scripts.Call) [][]*backend.Cmd {
	perMember := make([][]*backend.Cmd, len(q.members))
	var ok int
	ask(ctx, q, func(ctx context.Context, mb *member) ([]*backend.Cmd, error) {
		if mb.batches.Add(1) > q.batchesInFlight() {
			mb.batches.Add(-1)
			return nil, errBatchBusy
		}
		defer mb.batches.Add(-1)
		batch := make([]redo, len(calls))
		for i, call := range calls {
			batch[i] = redo{s: s, call: call}
		}
		cmds := mb.pipeline(ctx, batch)
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return cmds, err
			}
		}
		return cmds, nil
	}, func(a answer[[]*backend.Cmd], pending int) bool {
		if a.err == nil {
			ok++
		}
		if !errors.Is(a.err, errBatchBusy) {
			perMember[a.i] = a.v
		}
		return ok >= q.need || ok+pending < q.need
	}, nil)
	return perMember
}

// batchesInFlight is how many of runBatches's pipelines one master may have
// unanswered: as many as a renewal interval fits in a read timeout, and one
// more, so that renewals keep a master that answers late but within its
// read timeout; a master that does not answer ties up that many
// connections, no more. 4 when a read timeout is unknown.
func (q *quorumStore) batchesInFlight() int32 {
	interval := q.c.opts.watchdog / 3
	if q.c.readBound <= 0 || interval <= 0 {
		return 4
	}
	return int32(min((q.c.readBound+interval-1)/interval+1, 64))
}

// errBatchBusy is a member skipped by runBatches.
var errBatchBusy = errors.New("lockmw: the previous batches have not returned")
