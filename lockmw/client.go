package lockmw

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// Client is one lock owner space on Redis, like one Redisson instance: every
// lock it takes is owned by "<ID>:<ownerID>". A Client is safe for
// concurrent use. It runs a fixed number of goroutines whatever the number of
// locks held or waited for: one watchdog and one pub/sub receiver per
// subscription connection (one on a single node or Sentinel; on a Redis 7
// cluster one sharded SSUBSCRIBE connection per master that serves names
// with waiters).
//
// Close it when done; Close does not close the go-redis client.
type Client struct {
	be      backend.Backend // where the locks live (a quorum's first master)
	info    backend.Info    // be's
	id      string
	ns      string // WithNamespace
	opts    options
	cluster bool
	log     *slog.Logger

	ownerSeq atomic.Uint64
	reqSeq   atomic.Uint64
	nonce    string       // random, per Client value: names its request latches
	pubCmd   atomic.Value // "publish" or "spublish", once known
	latchMS  int64
	// Script arguments boxed once (see flag).
	latchArg    any // latchMS
	graceArg    any // how long a queue entry outlives the holder's TTL: the watchdog timeout, in ms
	watchdogArg any // the watchdog timeout in ms
	claimWDArg  any // claimWindow of the watchdog timeout
	tokenTTLArg any // the fencing counter's TTL in ms (fencing.go)

	contention  *contention   // where contention was seen lately (mutexfastpath.go)
	fastOff     atomic.Bool   // the server refused RESTORE: acquire with scripts only
	fastChecked atomic.Bool   // a lock made by RESTORE was seen to be a hash
	dumpKind    atomic.Uint32 // RESTORE's payload: the dumpKind the probe saw make a hash
	probing     atomic.Bool   // a probeRestore is under way: the others use the scripts meanwhile

	bgCtx    context.Context // cancelled by Close; parent of background calls
	bgCancel context.CancelFunc
	closed   chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	mu    sync.Mutex
	holds map[*hold]struct{} // every hold not yet ended

	store store             // where the locks live: one Redis or a quorum (store.go)
	batch *batcher          // the hot path's pipelines (batch.go); nil when off
	proc  scripts.Processor // batch, or be when it is nil
	// ctxTrusted says every node's back-end ends reads at the context's
	// deadline (backend.Info.ContextDeadlines, bounded.go).
	ctxTrusted bool
	// readBound is the longest socket read timeout of the nodes' clients,
	// 0 when one of them has none or is of unknown type (an inline release: releasectx.go).
	readBound time.Duration
	releases  *releaseClock // the releases' shared deadlines (releasectx.go)
	renewer   *renewer      // renews the holds and runs the background chores
	hubs      []*hub        // one per node of the store: the pub/sub side

	replicas       int           // WithReplicaSync: replicas that must acknowledge an acquisition
	replicaTimeout time.Duration // and how long WAIT waits for them
}

// New returns a Client that keeps its locks on rdb: a *redis.Client, a
// failover (Sentinel) client or a *redis.ClusterClient. It panics when rdb is
// nil, an option is nil or an option's value is invalid (see [Option]): that
// is configuration that can never be right.
//
// New is NewFromBackend with the go-redis back-end of rdb (package
// lockmw/backend/goredis): every command goes through rdb, so its hooks see
// them all.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	if rdb == nil {
		panic("lockmw: New(nil): a go-redis client is required")
	}
	return newClient(goredis.New(rdb), nil, opts)
}

// NewFromBackend returns a Client that keeps its locks on the Redis behind
// b: a back-end of package lockmw/backend (its go-redis one, or another
// client's, such as rueidis). It panics when b is nil, an option is nil or
// an option's value is invalid, and when an option needs a capability b does
// not offer (WithReplicaSync needs PipelineOn).
func NewFromBackend(b backend.Backend, opts ...Option) *Client {
	if b == nil {
		panic("lockmw: NewFromBackend(nil): a back-end is required")
	}
	return newClient(b, nil, opts)
}

// newClient builds a Client on be, or on the quorum members when members is
// not nil (be is then the first member): the options, the store that says
// where locks live, the pub/sub hubs and the renewer's goroutine.
func newClient(be backend.Backend, members []backend.Backend, opts []Option) *Client {
	o := newOptions(opts)
	if o.clientID == "" {
		o.clientID = newUUID()
	}
	info := be.Info()
	if o.replicas > 0 && members == nil && errors.Is(be.PipelineOn(context.Background(), "", nil), errors.ErrUnsupported) {
		panic("lockmw: WithReplicaSync: the back-end does not offer PipelineOn, which WAIT needs")
	}
	c := &Client{
		be:          be,
		info:        info,
		id:          o.clientID,
		ns:          o.namespace,
		opts:        o,
		log:         o.logger,
		nonce:       newUUID(),
		latchMS:     latchTTL(info).Milliseconds(),
		graceArg:    o.watchdog.Milliseconds(),
		watchdogArg: msCeil(o.watchdog),
		claimWDArg:  claimWindow(o.watchdog),
		tokenTTLArg: msCeil(fenceCounterTTL),
		contention:  newContention(),
		closed:      make(chan struct{}),
		holds:       make(map[*hold]struct{}),

		replicas:       o.replicas,
		replicaTimeout: o.replicaTimeout,
	}
	c.cluster = info.Cluster
	if !c.cluster {
		c.pubCmd.Store("publish")
	}
	c.latchArg = c.latchMS
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	c.store = newStore(c, be, members)
	c.proc = be
	if members == nil {
		if c.batch = newBatcher(be, o.noBatching); c.batch != nil {
			c.proc = c.batch
		}
	}
	c.ctxTrusted = true
	for _, r := range c.store.nodes() {
		c.ctxTrusted = c.ctxTrusted && r.Info().ContextDeadlines
	}
	c.readBound = readBound(c.store.nodes())
	inline := c.readBound
	if c.ctxTrusted {
		inline = 0
	}
	c.releases = newReleaseClock(o.releaseTimeout, inline)
	c.renewer = newRenewer(c)
	if c.batch != nil {
		c.batch.onEnd = c.renewer.wake
	}
	for _, r := range c.store.nodes() {
		c.hubs = append(c.hubs, newHub(c, r))
	}
	c.wg.Add(1)
	go c.renewer.run()
	return c
}

// ID returns the client's ID, the first half of every owner field.
func (c *Client) ID() string { return c.id }

// Namespace returns the prefix of every key and channel of the Client's
// locks (WithNamespace), "" when it has none. Adapters start the keys they
// keep beside the locks with it.
func (c *Client) Namespace() string { return c.ns }

// Redis returns the go-redis client the locks live on, for adapters that keep
// small keys of their own beside the locks. For a quorum client it is the
// first of its masters. It is nil when the Client's back-end is not
// go-redis's (NewFromBackend): such adapters then refuse the Client.
func (c *Client) Redis() redis.UniversalClient {
	if g, ok := c.be.(interface{ Client() redis.UniversalClient }); ok {
		return g.Client()
	}
	return nil
}

// Backend returns the back-end the locks live on (a quorum's first master's).
func (c *Client) Backend() backend.Backend { return c.be }

// Close stops the client: every hold context is cancelled with cause
// ErrClosed and renewal stops (the locks stay in Redis until they are
// unlocked or expire; Unlock still releases them), waiters blocked in Lock
// return ErrClosed, and later Lock calls return ErrClosed. Close waits for the
// client's goroutines to end and is safe to call more than once.
func (c *Client) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.mu.Lock()
		hs := make([]*hold, 0, len(c.holds))
		for h := range c.holds {
			hs = append(hs, h)
		}
		c.mu.Unlock()
		for _, h := range hs {
			h.end(endClosed, ErrClosed)
		}
		c.bgCancel()
		for _, h := range c.hubs {
			h.close()
		}
	})
	c.wg.Wait()
	c.batch.close()
	return nil
}

// Done returns a channel that is closed when Close is called. Goroutines
// that work for the Client's holds outside of it (an adapter retrying a
// failed Unlock in the background) stop on it.
func (c *Client) Done() <-chan struct{} { return c.closed }

// isClosed reports whether Close was called.
func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// publishCmd is the command the scripts publish with: SPUBLISH on a Redis 7
// cluster (sharded pub/sub, as Redisson 3.22+ does there), PUBLISH elsewhere.
func (c *Client) publishCmd(ctx context.Context) string {
	if v, ok := c.pubCmd.Load().(string); ok {
		return v
	}
	q := backend.NewCmd("info", "server")
	_ = c.be.Process(ctx, q)
	info, err := q.Text()
	if err != nil {
		return "publish" // not remembered: asked again next time
	}
	cmd := "publish"
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			var major int
			if _, err := fmt.Sscanf(v, "%d", &major); err == nil && major >= 7 {
				cmd = "spublish"
			}
		}
	}
	c.pubCmd.Store(cmd)
	return cmd
}

// publishArg is publishCmd as a script argument, boxed once it is known.
func (c *Client) publishArg(ctx context.Context) any {
	if v := c.pubCmd.Load(); v != nil {
		return v
	}
	return c.publishCmd(ctx)
}

// requestID names one request's latch key, so that go-redis re-sending it
// after a timeout finds the first result instead of counting twice. The
// instance nonce keeps two Client values with the same ID (a restarted
// process with WithClientID) from ever finding each other's latches.
func (c *Client) requestID() string {
	return c.nonce + ":" + formatUint(c.reqSeq.Add(1))
}

// latchKey is base followed by a new request ID (requestID): a release's
// latch key, built in one allocation on the hot path of Unlock.
func (c *Client) latchKey(base string) string {
	var buf [128]byte
	b := append(buf[:0], base...)
	b = append(append(b, c.nonce...), ':')
	return string(strconv.AppendUint(b, c.reqSeq.Add(1), 10))
}

// addHold records h until it ends, for Close.
func (c *Client) addHold(h *hold) {
	c.mu.Lock()
	c.holds[h] = struct{}{}
	c.mu.Unlock()
}

// removeHold forgets an ended hold.
func (c *Client) removeHold(h *hold) {
	c.mu.Lock()
	delete(c.holds, h)
	c.mu.Unlock()
}

// latchTTL is how long a request's latch key lives: long enough to cover
// the back-end re-sending it (backend.Info.Resend; when unknown, what
// go-redis's default options allow: 4 tries of 3 s, 512 ms apart).
func latchTTL(info backend.Info) time.Duration {
	d := info.Resend
	if d <= 0 {
		d = 4*3*time.Second + 3*512*time.Millisecond
	}
	return min(max(d, time.Second), time.Minute)
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
