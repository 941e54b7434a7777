package lockmw

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// syncReplicas waits, when WithReplicaSync is set, until enough replicas have
// the acquisition of field; when they do not, it gives the lock up. WAIT only
// covers writes of its own connection and cannot run in a script, so it goes
// in one pipeline (one connection) right after a no-op write to the lock
// (touch): the replication stream is ordered, so a replica that has the touch
// has the acquisition too, also when a hand-off wrote it.
func (s *singleStore) syncReplicas(ctx context.Context, e engine, field string) error {
	c := s.c
	if c.replicas == 0 {
		return nil
	}
	var acks int64
	var err error
	for _, load := range []bool{false, true} {
		line := scripts.Line(scripts.Touch, []string{e.renewKey}, []any{field})
		if load {
			line = scripts.EvalLine(scripts.Touch.Source(), line)
		}
		touch, wait := backend.NewCmd(line...), backend.NewCmd("wait", c.replicas, c.replicaTimeout.Milliseconds())
		// A keyless WAIT would go to any node: the lock's master, on the
		// touch's connection.
		if perr := s.be.PipelineOn(ctx, e.renewKey, []*backend.Cmd{touch, wait}); errors.Is(perr, errors.ErrUnsupported) {
			e.abandon(field)
			return fmt.Errorf("lockmw: replica sync for %q: %w", e.name, perr)
		}
		if scripts.IsNoScript(touch.Err()) && !load {
			continue
		}
		if err = touch.Err(); err == nil {
			acks, err = wait.Int64()
		}
		break
	}
	if err == nil && acks >= int64(c.replicas) {
		return nil
	}
	// Redis answers (only the replicas lag): give the lock up before
	// returning, so that nothing is held when the acquisition fails.
	_, _, _ = e.leaveQueue(ctx, field, false, 0)
	if err != nil {
		return fmt.Errorf("lockmw: replica sync for %q: %w", e.name, err)
	}
	return fmt.Errorf("%w: %d of %d replicas acknowledged %q within %v", ErrNotReplicated, acks, c.replicas, e.name, c.replicaTimeout)
}
