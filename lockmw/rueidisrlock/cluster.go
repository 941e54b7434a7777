package rueidisrlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/rueidis"
)

// NodeOf is the address of the master serving key's slot on a cluster, ""
// for other clients. rueidis routes every command by its slot itself but
// does not expose its slot map: NodeOf keeps one of its own, read with
// CLUSTER SLOTS at the first call and at each Refresh. A stale entry (the
// slot moved and Refresh was not called yet) costs only grouping: the
// engine's pipelines still reach the right master through rueidis, and a
// sharded subscription on the old master is dropped by it (Unsubscribed).
func (b *back) NodeOf(ctx context.Context, key string) (string, error) {
	if !b.cluster {
		return "", nil
	}
	rc := b.c.B().Arbitrary("exists").Keys(key).Build()
	slot := rc.Slot()
	b.mu.Lock()
	slots := b.slots
	b.mu.Unlock()
	if slots == nil {
		var err error
		if slots, err = b.loadSlots(ctx); err != nil {
			return "", err
		}
	}
	if n := slots[slot]; n != "" {
		return n, nil
	}
	return "", fmt.Errorf("rueidisrlock: no master serves slot %d of %q", slot, key)
}

// Refresh reloads the slot map NodeOf reads. (rueidis reloads its own at
// the next MOVED or connection error.)
func (b *back) Refresh(ctx context.Context) {
	if b.cluster {
		_, _ = b.loadSlots(ctx)
	}
}

func (b *back) loadSlots(ctx context.Context) ([]string, error) {
	rows, err := b.c.Do(ctx, b.c.B().Arbitrary("cluster", "slots").Build()).ToArray()
	if err != nil {
		return nil, convertErr(err)
	}
	slots := make([]string, 16384)
	for _, row := range rows {
		r, err := row.ToArray()
		if err != nil || len(r) < 3 {
			continue
		}
		lo, _ := r[0].AsInt64()
		hi, _ := r[1].AsInt64()
		master, err := r[2].ToArray()
		if err != nil || len(master) < 2 {
			continue
		}
		host, _ := master[0].ToString()
		port, _ := master[1].AsInt64()
		addr := fmt.Sprintf("%s:%d", host, port)
		for s := lo; s <= hi && s < 16384; s++ {
			slots[s] = addr
		}
	}
	b.mu.Lock()
	b.slots = slots
	b.mu.Unlock()
	return slots, nil
}

// nodeClient is the client of the master serving key: a cluster's node
// (Client.Nodes), or the client itself.
func (b *back) nodeClient(ctx context.Context, key string) (rueidis.Client, error) {
	if !b.cluster {
		return b.c, nil
	}
	addr, err := b.NodeOf(ctx, key)
	if err != nil {
		return nil, err
	}
	if n, ok := b.c.Nodes()[addr]; ok {
		return n, nil
	}
	b.Refresh(ctx)
	if addr, err = b.NodeOf(ctx, key); err != nil {
		return nil, err
	}
	if n, ok := b.c.Nodes()[addr]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("rueidisrlock: the client has no connection to %s, the master of %q", addr, key)
}

// PipelineOn runs cmds in one DoMulti on one dedicated connection of the
// master serving key, so that WAIT counts the writes before it.
func (b *back) PipelineOn(ctx context.Context, key string, cmds []*backend.Cmd) error {
	if len(cmds) == 0 {
		return nil
	}
	n, err := b.nodeClient(ctx, key)
	if err == nil {
		err = n.Dedicated(func(d rueidis.DedicatedClient) error {
			return doMulti(ctx, d, b, cmds)
		})
		if !errors.Is(err, rueidis.ErrDedicatedClientRecycled) {
			return err // each command has its own
		}
	}
	err = convertErr(err)
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}
