package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The methods below inspect and change a running cluster: who owns a slot,
// manual and forced fail-overs, a crashed master, a migrated slot. They talk
// to the nodes that are running (see Server.Running); a paused node blocks
// them until ctx is done, so resume it first. Cluster.Masters and
// Cluster.Replicas keep the roles the nodes had when the cluster was formed;
// after a fail-over, ask MasterFor, CurrentMasters or ReplicaOf.

// migrateBatch is how many keys one MIGRATE of MigrateSlot moves.
const migrateBatch = 100

// migrateTimeout is the MIGRATE timeout argument, in milliseconds.
const migrateTimeout = 5000

// NodeID returns the cluster node ID of s (what CLUSTER MYID answers), or ""
// if s is not a node of c. Node IDs survive Stop, Kill and Restart.
func (c *Cluster) NodeID(s *Server) string {
	return c.ids[s]
}

// node returns the node with the given ID, or nil.
func (c *Cluster) node(id string) *Server {
	for s, sid := range c.ids {
		if sid == id {
			return s
		}
	}
	return nil
}

// running returns the nodes whose process is alive, masters first.
func (c *Cluster) running() []*Server {
	var nodes []*Server
	for _, s := range c.Nodes() {
		if s.Running() {
			nodes = append(nodes, s)
		}
	}
	return nodes
}

// MasterFor returns the master that owns key's hash slot (see Slot), in the
// view of the first running node that answers. Right after a change of
// topology the nodes may disagree for a moment; the methods that change it
// (Failover, KillMaster, MigrateSlot) return only once they all agree.
func (c *Cluster) MasterFor(ctx context.Context, key string) (*Server, error) {
	slot := Slot(key)
	var errs []error
	for _, s := range c.running() {
		view, err := clusterNodes(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range view {
			if e.has("master") && rangesCover(e.slots, slot, slot) {
				if m := c.node(e.id); m != nil {
					return m, nil
				}
				return nil, fmt.Errorf("redistest: %s says slot %d is owned by %s, not a node of this cluster", s.Addr(), slot, e.addr)
			}
		}
		return nil, fmt.Errorf("redistest: slot %d of key %q has no owner in the view of %s", slot, key, s.Addr())
	}
	return nil, fmt.Errorf("redistest: no running node answered CLUSTER NODES: %w", errors.Join(errs...))
}

// CurrentMasters returns the running nodes that are masters owning slots by
// their own account, in the order of Nodes.
func (c *Cluster) CurrentMasters(ctx context.Context) ([]*Server, error) {
	var masters []*Server
	for _, s := range c.running() {
		me, err := myself(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		if me.has("master") && me.slots != "" {
			masters = append(masters, s)
		}
	}
	return masters, nil
}

// ReplicaOf returns a running replica of master that is not flagged as
// failing, as master sees it (or, if master is not running, as the first
// running node that answers sees it). It fails if there is none.
func (c *Cluster) ReplicaOf(ctx context.Context, master *Server) (*Server, error) {
	if c.ids[master] == "" {
		return nil, errors.New("redistest: ReplicaOf: not a node of this cluster")
	}
	rs, err := c.replicasOf(ctx, master)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// replicasOf returns all the running replicas of master that are not
// flagged as failing, in the view ReplicaOf describes. It fails if there is
// none.
func (c *Cluster) replicasOf(ctx context.Context, master *Server) ([]*Server, error) {
	id := c.ids[master]
	order := c.running()
	if i := slices.Index(order, master); i > 0 {
		order[0], order[i] = order[i], order[0]
	}
	var errs []error
	for _, s := range order {
		view, err := clusterNodes(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var rs []*Server
		for _, e := range view {
			if e.master != id || !e.has("slave") || e.has("fail") || e.has("fail?") {
				continue
			}
			if r := c.node(e.id); r != nil && r.Running() {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("redistest: %s has no running replica in the view of %s", master.Addr(), s.Addr())
		}
		return rs, nil
	}
	return nil, fmt.Errorf("redistest: no running node answered CLUSTER NODES: %w", errors.Join(errs...))
}

// WaitReplicated waits until every running replica of master has received
// all that master had written when it was called: each replica's
// replication offset reaches the master's. WAIT cannot stand in for it
// from a test: it waits for the replicas' acknowledgement of what its own
// connection wrote, nothing when that connection wrote nothing (and a
// cluster client sends a keyless WAIT to any node).
func (c *Cluster) WaitReplicated(ctx context.Context, master *Server) error {
	replicas, err := c.replicasOf(ctx, master)
	if err != nil {
		return err
	}
	info, err := master.Client().Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("redistest: INFO replication on %s: %w", master.Addr(), err)
	}
	want, ok := infoInt(info, "master_repl_offset")
	if !ok {
		return fmt.Errorf("redistest: no master_repl_offset in the INFO of %s", master.Addr())
	}
	return poll(ctx, fmt.Sprintf("the replicas of %s at offset %d", master.Addr(), want), func() (bool, string) {
		for _, r := range replicas {
			info, err := r.Client().Info(ctx, "replication").Result()
			if err != nil {
				return false, fmt.Sprintf("INFO replication on %s: %v", r.Addr(), err)
			}
			if got, _ := infoInt(info, "slave_repl_offset"); got < want {
				return false, fmt.Sprintf("%s is at offset %d", r.Addr(), got)
			}
		}
		return true, ""
	})
}

// infoInt reads the integer field name of an INFO reply.
func infoInt(info, name string) (int64, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Failover runs CLUSTER FAILOVER on replica, with mode "" (a coordinated
// manual fail-over: the master stops its clients until the replica has caught
// up), "FORCE" (no handshake with the master, but an election among the
// masters) or "TAKEOVER" (no election either: the replica takes the slots
// with a new epoch). It returns once replica is a master, every running node
// is cluster_state:ok and agrees that replica owns its former master's slots,
// and the former master, if running, is a replica of it with its link up,
// as every running node sees it.
func (c *Cluster) Failover(ctx context.Context, replica *Server, mode string) error {
	mode = strings.ToUpper(mode)
	switch mode {
	case "", "FORCE", "TAKEOVER":
	default:
		return fmt.Errorf(`redistest: Failover mode %q: want "", "FORCE" or "TAKEOVER"`, mode)
	}
	if c.ids[replica] == "" {
		return errors.New("redistest: Failover: not a node of this cluster")
	}
	me, err := myself(ctx, replica)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	old := c.node(me.master)
	if !me.has("slave") || old == nil {
		return fmt.Errorf("redistest: Failover: %s is not a replica (flags %s)", replica.Addr(), strings.Join(me.flags, ","))
	}
	slots, err := slotsOf(ctx, replica, c.ids[old])
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != "" {
		args = append(args, mode)
	}
	if err := replica.Client().Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER %s on %s: %w", mode, replica.Addr(), err)
	}
	what := fmt.Sprintf("%s to take over slots %s from %s", replica.Addr(), slots, old.Addr())
	if err := c.waitOwner(ctx, what, replica, slots); err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER %s: %w", mode, err)
	}
	if !old.Running() {
		return nil
	}
	oldID, newID := c.ids[old], c.ids[replica]
	err = poll(ctx, old.Addr()+" to replicate "+replica.Addr(), func() (bool, string) {
		role, err := old.Client().Do(ctx, "ROLE").Slice()
		if err != nil {
			return false, err.Error()
		}
		if len(role) < 4 || role[0] != "slave" || role[2] != int64(replica.Port()) || role[3] != "connected" {
			return false, fmt.Sprintf("ROLE %v", role)
		}
		for _, s := range c.running() { // so that ReplicaOf(replica) finds it
			view, err := clusterNodes(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			for _, e := range view {
				if e.id == oldID && (!e.has("slave") || e.master != newID) {
					return false, fmt.Sprintf("%s sees %s with flags %s, master %s", s.Addr(), old.Addr(), strings.Join(e.flags, ","), e.master)
				}
			}
		}
		return true, ""
	})
	if err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER %s: %w", mode, err)
	}
	return nil
}

// KillMaster kills master with SIGKILL (see Server.Kill) and waits until the
// cluster has promoted one of its replicas: every running node is
// cluster_state:ok, agrees that the replica owns master's slots, and flags
// master as failed ("fail", not just "fail?"; see waitFailed). It returns
// the promoted replica. If master has several replicas, the cluster picks
// one (the best replication offset ranks first), so the promoted one is
// known only once it has won its election. It fails without killing
// anything if master has no running replica. The fail-over takes a few
// seconds (cluster-node-timeout, then the replica's election delay).
func (c *Cluster) KillMaster(ctx context.Context, master *Server) (*Server, error) {
	if c.ids[master] == "" {
		return nil, errors.New("redistest: KillMaster: not a node of this cluster")
	}
	me, err := myself(ctx, master)
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	if !me.has("master") || me.slots == "" {
		return nil, fmt.Errorf("redistest: KillMaster: %s is not a master with slots (flags %s)", master.Addr(), strings.Join(me.flags, ","))
	}
	replicas, err := c.replicasOf(ctx, master)
	if err != nil {
		return nil, err
	}
	if err := master.Kill(); err != nil {
		return nil, err
	}
	replica, err := c.waitPromoted(ctx, replicas)
	if err != nil {
		return nil, fmt.Errorf("redistest: KillMaster: %s: %w", master.Addr(), err)
	}
	what := fmt.Sprintf("%s to take over slots %s from the killed %s", replica.Addr(), me.slots, master.Addr())
	if err := c.waitOwner(ctx, what, replica, me.slots); err != nil {
		return nil, fmt.Errorf("redistest: KillMaster: %w", err)
	}
	if err := c.waitFailed(ctx, master); err != nil {
		return nil, fmt.Errorf("redistest: KillMaster: %w", err)
	}
	return replica, nil
}

// waitPromoted polls until one of replicas is, by its own account, a master
// with slots, and returns it.
func (c *Cluster) waitPromoted(ctx context.Context, replicas []*Server) (*Server, error) {
	var won *Server
	err := poll(ctx, "one of its replicas to win the election", func() (bool, string) {
		for _, r := range replicas {
			me, err := myself(ctx, r)
			if err != nil {
				return false, err.Error()
			}
			if me.has("master") && me.slots != "" {
				won = r
				return true, ""
			}
		}
		return false, "no replica is a master with slots yet"
	})
	return won, err
}

// waitFailed polls until every running node flags the stopped node dead as
// "fail". A node that has only its own suspicion ("fail?") still reports dead
// as healthy elsewhere: in CLUSTER SHARDS a dead master keeps the role
// "master", and only its health ("fail") tells it from the replica that
// took its slots; Valkey 8 lists both in the same shard, as they share a
// shard ID.
func (c *Cluster) waitFailed(ctx context.Context, dead *Server) error {
	id := c.ids[dead]
	return poll(ctx, "every running node to flag "+dead.Addr()+" as failed", func() (bool, string) {
		for _, s := range c.running() {
			view, err := clusterNodes(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			for _, e := range view {
				if e.id == id && !e.has("fail") {
					return false, fmt.Sprintf("%s sees %s with flags %s", s.Addr(), dead.Addr(), strings.Join(e.flags, ","))
				}
			}
		}
		return true, ""
	})
}

// MigrateSlot moves slot, with its keys, from its owner to the master to, the
// way redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on to,
// MIGRATING on the owner, CLUSTER GETKEYSINSLOT and MIGRATE ... KEYS in
// batches until the slot is empty on the owner, then CLUSTER SETSLOT NODE on
// to, on the owner and on the other running masters. Keys written meanwhile
// are redirected with ASK, as in a real resharding. It returns once every
// running node agrees that to owns the slot. Moving a slot to its owner does
// nothing.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Server) error {
	if slot < 0 || slot >= numSlots {
		return fmt.Errorf("redistest: MigrateSlot: slot %d out of range 0-%d", slot, numSlots-1)
	}
	dstID := c.ids[to]
	if dstID == "" {
		return errors.New("redistest: MigrateSlot: not a node of this cluster")
	}
	view, err := clusterNodes(ctx, to)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	var src *Server
	for _, e := range view {
		if e.has("myself") && !e.has("master") {
			return fmt.Errorf("redistest: MigrateSlot: %s is not a master (flags %s)", to.Addr(), strings.Join(e.flags, ","))
		}
		if e.has("master") && rangesCover(e.slots, slot, slot) {
			src = c.node(e.id)
		}
	}
	if src == nil {
		return fmt.Errorf("redistest: MigrateSlot: slot %d has no owner in this cluster in the view of %s", slot, to.Addr())
	}
	if src == to {
		return nil
	}
	srcID := c.ids[src]
	setslot := func(s *Server, args ...any) error {
		args = append([]any{"CLUSTER", "SETSLOT", slot}, args...)
		if err := s.Client().Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redistest: %v on %s: %w", args, s.Addr(), err)
		}
		return nil
	}
	if err := setslot(to, "IMPORTING", srcID); err != nil {
		return err
	}
	if err := setslot(src, "MIGRATING", dstID); err != nil {
		return err
	}
	for moved := false; ; {
		if err := c.migrateKeys(ctx, slot, src, to); err != nil {
			return err
		}
		if !moved { // the new owner first, so that it never answers MOVED back
			if err := setslot(to, "NODE", dstID); err != nil {
				return err
			}
			moved = true
		}
		// The owner refuses while it still holds keys: a write to a key it
		// had may have come between the last GETKEYSINSLOT and now.
		err := setslot(src, "NODE", dstID)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "still hold keys") {
			return err
		}
	}
	for _, s := range c.running() {
		if s == src || s == to {
			continue
		}
		me, err := myself(ctx, s)
		if err != nil {
			return fmt.Errorf("redistest: %w", err)
		}
		if me.has("master") {
			if err := setslot(s, "NODE", dstID); err != nil {
				return err
			}
		}
	}
	what := fmt.Sprintf("%s to own slot %d", to.Addr(), slot)
	if err := c.waitOwner(ctx, what, to, strconv.Itoa(slot)); err != nil {
		return fmt.Errorf("redistest: MigrateSlot: %w", err)
	}
	return nil
}

// migrateKeys moves the keys of slot from src to dst until src has none.
func (c *Cluster) migrateKeys(ctx context.Context, slot int, src, dst *Server) error {
	for {
		keys, err := src.Client().Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, migrateBatch).StringSlice()
		if err != nil {
			return fmt.Errorf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %w", slot, src.Addr(), err)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{"MIGRATE", "127.0.0.1", dst.Port(), "", 0, migrateTimeout, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		// A NOKEY status (the keys expired meanwhile) is not an error.
		if err := src.Client().Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redistest: MIGRATE of %d keys of slot %d from %s to %s: %w", len(keys), slot, src.Addr(), dst.Addr(), err)
		}
	}
}

// waitOwner polls until every running node is cluster_state:ok, all of them
// see the same slot owners, and owner owns the slot ranges in ranges.
func (c *Cluster) waitOwner(ctx context.Context, what string, owner *Server, ranges string) error {
	id := c.ids[owner]
	want := parseRanges(ranges)
	return poll(ctx, what, func() (bool, string) {
		var first string
		for _, s := range c.running() {
			info, err := s.Client().Do(ctx, "CLUSTER", "INFO").Text()
			if err != nil {
				return false, fmt.Sprintf("CLUSTER INFO on %s: %v", s.Addr(), err)
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false, s.Addr() + " is not cluster_state:ok"
			}
			view, err := clusterNodes(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			var owners []string
			for _, e := range view {
				if e.has("master") && e.slots != "" {
					owners = append(owners, e.id+" "+e.slots)
				}
				if e.id != id {
					continue
				}
				for _, r := range want {
					if !e.has("master") || !rangesCover(e.slots, r[0], r[1]) {
						return false, fmt.Sprintf("%s sees %s with flags %s and slots %q", s.Addr(), owner.Addr(), strings.Join(e.flags, ","), e.slots)
					}
				}
			}
			slices.Sort(owners)
			if o := strings.Join(owners, "\n"); first == "" {
				first = o
			} else if o != first {
				return false, fmt.Sprintf("the nodes disagree on the slot owners, %s sees:\n%s", s.Addr(), o)
			}
		}
		return true, ""
	})
}

// myself returns the "myself" line of s's CLUSTER NODES.
func myself(ctx context.Context, s *Server) (nodeEntry, error) {
	view, err := clusterNodes(ctx, s)
	if err != nil {
		return nodeEntry{}, err
	}
	for _, e := range view {
		if e.has("myself") {
			return e, nil
		}
	}
	return nodeEntry{}, fmt.Errorf("CLUSTER NODES on %s has no myself line", s.Addr())
}

// slotsOf returns the slot ranges of node id in the view of s.
func slotsOf(ctx context.Context, s *Server, id string) (string, error) {
	view, err := clusterNodes(ctx, s)
	if err != nil {
		return "", err
	}
	for _, e := range view {
		if e.id == id {
			return e.slots, nil
		}
	}
	return "", fmt.Errorf("%s does not know node %s", s.Addr(), id)
}

// parseRanges parses slot ranges as CLUSTER NODES prints them: "0-5460 6000".
func parseRanges(ranges string) [][2]int {
	var out [][2]int
	for _, r := range strings.Fields(ranges) {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		l, err1 := strconv.Atoi(lo)
		h, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil {
			out = append(out, [2]int{l, h})
		}
	}
	return out
}

// rangesCover reports whether lo..hi lies within one of the ranges. The
// ranges of a node in CLUSTER NODES are maximal, so a run of slots the node
// owns lies within one of them.
func rangesCover(ranges string, lo, hi int) bool {
	for _, r := range parseRanges(ranges) {
		if r[0] <= lo && hi <= r[1] {
			return true
		}
	}
	return false
}
