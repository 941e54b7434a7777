package rueidisrlock

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/rueidis"
)

// New returns a lockmw Client that runs on c: single node, Sentinel or
// cluster, as c is. It panics when c is nil, or on an invalid option (as
// lockmw.New does). Closing the Client does not close c, which stays the
// caller's; once c is closed, the Client's calls fail with an error
// matching lockmw.ErrClosed.
func New(c rueidis.Client, opts ...lockmw.Option) *lockmw.Client {
	if c == nil {
		panic("rueidisrlock: New(nil): a rueidis client is required")
	}
	return lockmw.NewFromBackend(Backend(c), opts...)
}

// Backend returns c as a back-end, for lockmw.NewQuorumOf and
// lockmw.NewFromBackend. It panics when c is nil.
func Backend(c rueidis.Client) backend.Backend {
	if c == nil {
		panic("rueidisrlock: Backend(nil): a rueidis client is required")
	}
	b := &back{c: c, cluster: c.Mode() == rueidis.ClientModeCluster}
	b.info = backend.Info{
		Name:             nameOf(c),
		Cluster:          b.cluster,
		ContextDeadlines: true,
		ReadTimeout:      defaultConnWriteTimeout,
		Batch:            true,
	}
	return b
}

// defaultConnWriteTimeout is rueidis's default ClientOption.ConnWriteTimeout
// (its default keep-alive, 1 s, times 10): the longest one reply is waited
// for whatever the context says.
const defaultConnWriteTimeout = 10 * time.Second

// back is a rueidis client as a backend.Backend.
type back struct {
	backend.Defaults
	c       rueidis.Client
	cluster bool
	info    backend.Info

	mu    sync.Mutex
	slots []string // a cluster's master per slot, from CLUSTER SLOTS; nil until loaded
}

func nameOf(c rueidis.Client) string {
	var addrs []string
	for a := range c.Nodes() {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

func (b *back) Info() backend.Info { return b.info }

// Process runs cmd through the client's Do.
func (b *back) Process(ctx context.Context, cmd *backend.Cmd) error {
	rc, err := b.build(b.c.B(), cmd)
	if err == nil {
		err = ctx.Err() // rueidis may still answer a call on a done context
	}
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	return answer(cmd, b.c.Do(ctx, rc))
}

// Pipeline runs cmds in one DoMulti: rueidis sends them in one round trip
// per node, each to its slot's master.
func (b *back) Pipeline(ctx context.Context, cmds []*backend.Cmd) error {
	return doMulti(ctx, b.c, b, cmds)
}

// doer is what DoMulti needs: a client or a dedicated one.
type doer interface {
	B() rueidis.Builder
	DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult
}

func doMulti(ctx context.Context, d doer, b *back, cmds []*backend.Cmd) error {
	rcs := make([]rueidis.Completed, 0, len(cmds))
	idx := make([]int, 0, len(cmds))
	var first error
	for i, c := range cmds {
		rc, err := b.build(d.B(), c)
		if err != nil {
			c.SetErr(err)
			if first == nil {
				first = err
			}
			continue
		}
		rcs = append(rcs, rc)
		idx = append(idx, i)
	}
	if len(rcs) == 0 {
		return first
	}
	if err := ctx.Err(); err != nil { // DoMulti may have sent them already on a done context
		for _, i := range idx {
			cmds[i].SetErr(err)
		}
		return err
	}
	for j, r := range d.DoMulti(ctx, rcs...) {
		if err := answer(cmds[idx[j]], r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// keyless are the commands lockmw (and the conformance suite) sends whose
// first argument is not a key: they go to any node (PUBLISH: plain pub/sub
// reaches every node of a cluster).
var keyless = map[string]bool{
	"ping": true, "info": true, "wait": true, "pubsub": true, "publish": true,
	"script": true, "cluster": true, "client": true, "config": true, "time": true,
	"role": true, "dbsize": true, "debug": true, "echo": true, "hello": true,
}

// build is cmd as a rueidis command: its first key (backend.Cmd.FirstKey)
// as the one key rueidis routes by, the other arguments as they are.
func (b *back) build(bl rueidis.Builder, cmd *backend.Cmd) (rueidis.Completed, error) {
	args, err := cmd.StringArgs()
	if err != nil {
		return rueidis.Completed{}, err
	}
	if len(args) == 0 {
		return rueidis.Completed{}, errors.New("rueidisrlock: an empty command")
	}
	name := cmd.Name()
	at := 1
	switch name {
	case "eval", "evalsha":
		at = 3
	case "wait":
		return bl.Arbitrary(args...).Blocking(), nil
	}
	if keyless[name] || len(args) <= at {
		return bl.Arbitrary(args...).Build(), nil
	}
	if name == "eval" || name == "evalsha" {
		if n, _ := strconv.Atoi(args[2]); n == 0 {
			return bl.Arbitrary(args...).Build(), nil
		}
	}
	return bl.Arbitrary(args[:at]...).Keys(args[at]).Args(args[at+1:]...).Build(), nil
}

// answer sets cmd's reply from r's, and returns its error.
func answer(cmd *backend.Cmd, r rueidis.RedisResult) error {
	v, err := r.ToAny()
	if err == nil {
		if bv, ok := v.(bool); ok && !bv {
			err = rueidis.Nil // Lua false: a nil reply, as in RESP2
		}
	}
	if err != nil {
		err = convertErr(err)
		cmd.SetErr(err)
		return err
	}
	cmd.SetVal(convert(v))
	return nil
}

// convert is a reply as the seam's: an error element as a backend.Error, a
// RESP3 map as a flat array, a RESP3 boolean as Lua's RESP2 conversion
// gives it (true 1, false nil).
func convert(v any) any {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			v[i] = convert(e)
		}
		return v
	case map[string]any:
		flat := make([]any, 0, 2*len(v))
		for k, e := range v {
			flat = append(flat, k, convert(e))
		}
		return flat
	case bool:
		if v {
			return int64(1)
		}
		return nil
	case error:
		if re, ok := rueidis.IsRedisErr(v); ok {
			return backend.Error(re.Error())
		}
	}
	return v
}

// convertErr is a rueidis error as the seam's: a nil reply as backend.ErrNil,
// an error reply as a backend.Error, a closed client's as backend.ErrClosed
// (joined with rueidis's); network and context errors as they are.
func convertErr(err error) error {
	switch {
	case err == nil:
		return nil
	case rueidis.IsRedisNil(err):
		return backend.ErrNil
	case errors.Is(err, rueidis.ErrClosing), errors.Is(err, rueidis.ErrDedicatedClientRecycled):
		return errors.Join(backend.ErrClosed, err)
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return backend.Error(re.Error())
	}
	return err
}
