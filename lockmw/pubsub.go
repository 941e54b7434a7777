package lockmw

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// hub is a Client's pub/sub side: waiters on one name share one subscription
// (to Redisson's unlock channel, the roll-call channel rlock_handoff:{name}
// and this client's hand-off channel for the name,
// rlock_handoff:{name}:<clientID>), and all names
// share one connection (on a Redis 7 cluster, one per node, since a sharded
// subscription is bound to its slot's node). One goroutine per
// connection receives and dispatches:
//   - a hand-off "<field>|<token>|<previous holder>|<server µs>|<its metadata>" goes to
//     the one waiter with that field;
//   - Redisson's unlock message wakes one waiter of the name to retry;
//   - a (re)confirmed subscription after a lost connection wakes every waiter
//     of the name, since messages may have been missed.
//
// A node's sharded connection carries the channels of many slots, which
// go-redis cannot subscribe again by itself after a reconnect (it sends them
// all in one SSUBSCRIBE, and a node refuses channels of several slots in
// one). So when such a connection fails, or the node drops some of its
// channels (a slot moved away, a fail-over demoted it), the hub rebuilds it:
// a new connection per node that now serves the names' slots, subscribed one
// name at a time, and the names' waiters retry once it is confirmed.
//
// A name's subscription stays for one watchdog interval after its last
// waiter leaves, so steady contention does not subscribe again and again.
type hub struct {
	c         *Client
	be        backend.Backend
	mu        sync.Mutex
	names     map[string]*nameSub
	byChannel map[string]*nameSub
	shards    map[string]*shard         // by node address; "" for the unsharded one
	pending   map[string]pendingHandoff // hand-offs to our fields not (yet) registered
	closed    bool
}

// nameSub is one name's subscription and its waiters in a hub.
type nameSub struct {
	name        string
	k           *keys
	handoff     string // this client's hand-off channel for the name
	shard       *shard
	waiters     []*waiter
	byField     map[string]*waiter
	ready       chan struct{} // closed at the first confirmation
	confirmed   bool
	confirmedAt time.Time // the last (re)confirmation
	missed      bool      // the connection was lost since the last confirmation
	idleSince   time.Time
	reserved    reservationSeen // the roll-call channel's last reservation, and the messages after it (reserve.go)
	refused     error           // the server refused the subscription (NOPERM): ready is closed, and its waiters fail
}

// unsharded is the shards key of the one connection used with plain
// SUBSCRIBE (single node, Sentinel, clusters before Redis 7).
const unsharded = ""

// shard is one subscription connection of a hub and its receiver.
type shard struct {
	node    string // the node's address, or unsharded
	ps      backend.Subscription
	subs    int           // names subscribed through it
	backoff time.Duration // before rebuilding after an error; grows while rebuilds fail
}

// pendingHandoff is a hand-off that arrived before its waiter registered.
type pendingHandoff struct {
	handoff
	at time.Time
}

// newHub returns the pub/sub side of c on be.
func newHub(c *Client, be backend.Backend) *hub {
	return &hub{
		c:         c,
		be:        be,
		names:     make(map[string]*nameSub),
		byChannel: make(map[string]*nameSub),
		shards:    make(map[string]*shard),
		pending:   make(map[string]pendingHandoff),
	}
}

// join registers w as a waiter on the name of k, subscribing when needed. It
// reports whether the subscription has been in place, without a break,
// since before the waiter's first attempt was sent: otherwise a message for
// it may have been missed, and it must try once more.
// ready is nil when the subscription is confirmed, else closed when it is.
//
// A quorum's hub first pings its master when the name is not subscribed yet,
// without h.mu: the subscription may need a new connection, whose handshake
// waits for a paused master until go-redis's read timeout, and h.mu held
// meanwhile would stall the hub's receiver, every join and leave, and Close.
// A master that does not answer fails the join; the waiter needs a majority
// of the hubs only (quorumwait.go).
func (h *hub) join(ctx context.Context, k *keys, w *waiter, sent time.Time) (ns *nameSub, ok bool, ready <-chan struct{}, err error) {
	c := h.c
	pub := c.publishCmd(ctx)
	if len(c.hubs) > 1 && !h.subscribed(k.channel) {
		if err := h.be.Process(ctx, backend.NewCmd("ping")); err != nil {
			return nil, false, nil, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false, nil, ErrClosed
	}
	ns = h.names[k.channel]
	if ns == nil {
		ns = &nameSub{name: k.lock, k: k, handoff: k.handoff + ":" + c.id, byField: make(map[string]*waiter), ready: make(chan struct{})}
		if err := h.subscribe(ctx, ns, pub == "spublish", 0); err != nil {
			return nil, false, nil, err
		}
		h.names[k.channel] = ns
		h.byChannel[k.channel] = ns
		h.byChannel[k.handoff] = ns // the roll-call channel
		h.byChannel[ns.handoff] = ns
	}
	ok = ns.confirmed && !ns.missed && ns.confirmedAt.Before(sent)
	if !ns.confirmed {
		ready = ns.ready
	}
	ns.waiters = append(ns.waiters, w)
	ns.byField[w.field] = w
	ns.idleSince = time.Time{}
	if p, ok := h.pending[w.field]; ok {
		delete(h.pending, w.field)
		w.handed <- p.handoff
	}
	return ns, ok, ready, nil
}

// subscribed reports whether the hub has a subscription for the channel.
func (h *hub) subscribed(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[channel] != nil
}

// subscribe subscribes ns's channels, the hand-off channel last so that its
// confirmation means all are in place, on the connection of the node that
// serves its slot (sharded) or on the one connection. A new connection's
// receiver waits backoff before rebuilding it after an error. Called with
// h.mu held.
func (h *hub) subscribe(ctx context.Context, ns *nameSub, sharded bool, backoff time.Duration) error {
	node := unsharded
	if sharded {
		var err error
		if node, err = h.nodeOf(ctx, ns.k.lock); err != nil {
			return err
		}
	}
	return h.subscribeOn(ctx, ns, node, sharded, backoff)
}

// subscribeOn subscribes ns's channels on the connection keyed node, made
// when there is none. Called with h.mu held.
func (h *hub) subscribeOn(ctx context.Context, ns *nameSub, node string, sharded bool, backoff time.Duration) error {
	// One command for Redisson's channel and the roll-call channel, so that
	// a script never sees this client on one and not the other: the release
	// counts the subscribers of Redisson's channel that are not rlock
	// clients (lib.lua's rlock_others_wait).
	chans := []string{ns.k.channel, ns.k.handoff, ns.handoff}
	sh := h.shards[node]
	switch {
	case sh == nil:
		ps, err := h.be.Subscribe(ctx, sharded, chans...)
		if err != nil {
			return fmt.Errorf("lockmw: subscribe to %q: %w", ns.name, err)
		}
		sh = &shard{node: node, backoff: backoff, ps: ps}
		h.shards[node] = sh
		h.c.wg.Add(1)
		go h.receive(sh)
	case sharded:
		// An error means the connection failed: its receiver rebuilds it,
		// with these channels (go-redis has recorded them).
		if err := sh.ps.Subscribe(ctx, chans...); err != nil {
			ns.missed = true
			h.c.log.Debug("lockmw: subscribe failed, the connection is rebuilt", "name", ns.name, "err", err)
		}
	default:
		// A transient error (the server down, a reset) is the connection's:
		// go-redis has recorded the channels and subscribes them again when
		// its receiver reconnects; the confirmation then wakes the waiters.
		if err := sh.ps.Subscribe(ctx, chans...); err != nil {
			if !transientFailure(err) {
				return err
			}
			ns.missed = true
			h.c.log.Debug("lockmw: subscribe failed, subscribing again with the connection", "name", ns.name, "err", err)
		}
	}
	sh.subs++
	ns.shard = sh
	return nil
}

// nodeOf returns the address of the cluster node that serves key's slot
// (unsharded when the back-end is not a cluster's).
func (h *hub) nodeOf(ctx context.Context, key string) (string, error) {
	return h.be.NodeOf(ctx, key)
}

// leave unregisters w.
func (h *hub) leave(ns *nameSub, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, w.field)
	delete(ns.byField, w.field)
	for i, x := range ns.waiters {
		if x == w {
			ns.waiters = append(ns.waiters[:i], ns.waiters[i+1:]...)
			break
		}
	}
	if len(ns.waiters) == 0 {
		ns.idleSince = time.Now()
	}
}

// sweep drops subscriptions idle for a watchdog interval and stale pending
// hand-offs; the watchdog calls it every interval.
func (h *hub) sweep() {
	linger := h.c.opts.watchdog / 3
	ctx, cancel := context.WithTimeout(h.c.bgCtx, h.c.opts.releaseTimeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for f, p := range h.pending {
		if now.Sub(p.at) > linger {
			delete(h.pending, f)
		}
	}
	for name, ns := range h.names {
		if len(ns.waiters) > 0 || ns.idleSince.IsZero() || now.Sub(ns.idleSince) < linger {
			continue
		}
		delete(h.names, name)
		delete(h.byChannel, ns.k.channel)
		delete(h.byChannel, ns.k.handoff)
		delete(h.byChannel, ns.handoff)
		sh := ns.shard
		sh.subs--
		if sh.subs == 0 && sh.node != unsharded {
			delete(h.shards, sh.node)
			_ = sh.ps.Close() // its goroutine ends
			continue
		}
		if err := sh.ps.Unsubscribe(ctx, ns.k.channel, ns.k.handoff, ns.handoff); err != nil {
			h.c.log.Debug("lockmw: unsubscribe failed", "name", name, "err", err)
		}
	}
}

// close closes every subscription connection; their receivers end.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	shards := h.shards
	h.shards = make(map[string]*shard)
	h.mu.Unlock()
	for _, sh := range shards {
		_ = sh.ps.Close()
	}
}

// receive reads one subscription connection until it is closed, or until
// it hands its names to a rebuilt one.
func (h *hub) receive(sh *shard) {
	c := h.c
	defer c.wg.Done()
	for {
		msg, err := sh.ps.Receive(c.bgCtx)
		if err != nil {
			if c.bgCtx.Err() != nil || h.shardClosed(sh) {
				return
			}
			if backend.HasPrefix(err, "NOPERM") {
				// The server refused a SUBSCRIBE: the connection is fine,
				// and waiting for its confirmation would last until the
				// waiters' deadlines.
				h.refuse(sh, err)
				continue
			}
			c.log.Debug("lockmw: pub/sub connection error", "err", err)
			h.connectionLost(sh) // a waiter joining during the back-off must retry
			sh.backoff = min(max(2*sh.backoff, 10*time.Millisecond), time.Second)
			select {
			case <-c.closed:
				return
			case <-time.After(sh.backoff):
			}
			if sh.node != unsharded {
				h.rebuild(sh)
				return
			}
			h.reloadClusterState()
			continue // go-redis reconnects and subscribes again
		}
		sh.backoff = 0
		switch msg.Kind {
		case backend.Subscribed:
			h.confirm(msg.Channel)
		case backend.Unsubscribed:
			if sh.node != unsharded {
				h.serverUnsubscribed(sh, msg.Channel)
			}
		case backend.Published:
			h.dispatch(msg.Channel, msg.Payload)
		}
	}
}

// refuse fails the names of sh not confirmed yet (the server's error does
// not say which channel it refused): their waiters return err, and the
// names are forgotten, so that a later waiter subscribes them again.
func (h *hub) refuse(sh *shard, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c.log.Warn("lockmw: subscription refused", "err", err)
	for name, ns := range h.names {
		if ns.shard != sh || ns.confirmed {
			continue
		}
		ns.refused = err
		ns.confirmed = true
		close(ns.ready)
		delete(h.names, name)
		delete(h.byChannel, ns.k.channel)
		delete(h.byChannel, ns.k.handoff)
		delete(h.byChannel, ns.handoff)
		sh.subs--
	}
}

// refusedErr is the refusal of ns's subscription, nil when none.
func (h *hub) refusedErr(ns *nameSub) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return ns.refused
}

// shardClosed reports whether sh was closed or replaced.
func (h *hub) shardClosed(sh *shard) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed || h.shards[sh.node] != sh
}

// connectionLost marks the shard's names as possibly having missed messages.
func (h *hub) connectionLost(sh *shard) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ns := range h.names {
		if ns.shard == sh {
			ns.missed = true
		}
	}
}

// serverUnsubscribed handles a sunsubscribe the server sent by itself (a
// slot moved away, or a fail-over demoted the node): the shard is rebuilt.
// The hub's own unsubscriptions (sweep) are of names it no longer has.
func (h *hub) serverUnsubscribed(sh *shard, channel string) {
	h.mu.Lock()
	ns := h.byChannel[channel]
	mine := ns != nil && ns.shard == sh && channel == ns.handoff
	h.mu.Unlock()
	if mine {
		h.rebuild(sh)
	}
}

// rebuild replaces a node's sharded connection: its names are subscribed
// again, one at a time, on the connections of the nodes that serve their
// slots now (new ones where needed), and their waiters retry once each
// subscription is confirmed. The old connection is closed; its receiver
// (the caller) then ends.
func (h *hub) rebuild(sh *shard) {
	h.mu.Lock()
	if h.closed || h.shards[sh.node] != sh {
		h.mu.Unlock()
		return
	}
	delete(h.shards, sh.node)
	h.reloadClusterState()
	ctx, cancel := context.WithTimeout(h.c.bgCtx, h.c.opts.releaseTimeout)
	defer cancel()
	for _, ns := range h.names {
		if ns.shard != sh {
			continue
		}
		ns.missed = true
		if err := h.subscribe(ctx, ns, true, sh.backoff); err != nil {
			// No cluster state: keep the name on a new connection keyed
			// like the old one; its failure brings the next rebuild.
			h.c.log.Debug("lockmw: resubscribe failed", "name", ns.name, "err", err)
			_ = h.subscribeOn(ctx, ns, sh.node, true, sh.backoff)
		}
	}
	h.mu.Unlock()
	_ = sh.ps.Close()
}

// reloadClusterState refreshes a cluster client's slot map, so that a
// (re)subscription goes to the slot's current master after a fail-over.
func (h *hub) reloadClusterState() {
	if h.c.cluster {
		ctx, cancel := context.WithTimeout(h.c.bgCtx, h.c.opts.releaseTimeout)
		defer cancel()
		h.be.Refresh(ctx)
	}
}

// confirm records a (re)confirmed subscription of channel: waiters that
// may have missed a message retry.
func (h *hub) confirm(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ns := h.byChannel[channel]
	if ns == nil || channel != ns.handoff {
		return
	}
	ns.confirmedAt = time.Now()
	if !ns.confirmed {
		ns.confirmed = true
		close(ns.ready)
	}
	if ns.missed {
		ns.missed = false
		for _, w := range ns.waiters {
			wakeUp(w)
		}
	}
}

// dispatch delivers a message: a hand-off to its waiter, Redisson's unlock
// message as a wake-up, a reservation's generation to the name (reserve.go).
func (h *hub) dispatch(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ns := h.byChannel[channel]
	if ns == nil {
		return
	}
	if channel == ns.handoff {
		field, ho, ok := parseHandoff(payload)
		if !ok {
			return
		}
		ho.at = time.Now()
		if w := ns.byField[field]; w != nil {
			select {
			case w.handed <- ho:
			default:
			}
			return
		}
		if strings.HasPrefix(field, h.c.id+":") {
			h.pending[field] = pendingHandoff{handoff: ho, at: time.Now()}
		}
		return
	}
	if channel == ns.k.handoff {
		ns.reserved.reserved(payload)
		return
	}
	// A semaphore's channel carries the count of free permits: as many
	// waiters wake (Redisson's SemaphorePubSub).
	if ns.k.sem {
		ns.reserved.unlocked()
		n, _ := strconv.Atoi(payload)
		for _, w := range ns.waiters {
			if n <= 0 {
				break
			}
			select {
			case w.wake <- struct{}{}:
				n--
			default:
			}
		}
		return
	}
	// Redisson's unlock channel: "0" (unlock) wakes one waiter; anything
	// else (Redisson's read-unlock "1", a read-write lock's write release)
	// wakes all. Either follows a reservation that was used.
	ns.reserved.unlocked()
	if payload != "0" || ns.k.wakeAll {
		for _, w := range ns.waiters {
			wakeUp(w)
		}
		return
	}
	for _, w := range ns.waiters {
		select {
		case w.wake <- struct{}{}:
			return
		default:
		}
	}
}

// wakeUp has w retry now, unless a wake-up is already pending.
func wakeUp(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
