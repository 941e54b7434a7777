// Package goredis is lockmw's back-end over go-redis v9: one Backend for
// every topology a go-redis client serves — a *redis.Client, a failover
// (Sentinel) client, a *redis.ClusterClient, a *redis.Ring or any other
// redis.UniversalClient. lockmw.New(rdb) builds it; build it yourself for
// lockmw.NewFromBackend or lockmw.NewQuorumOf.
//
// Every command goes through the client's own Process and Pipeline, so the
// hooks added to it (AddHook) see every command the engine sends, and a
// cluster client routes each command of a pipeline by its slot and follows
// MOVED and ASK as for any pipeline. The one exception is PipelineOn (the
// replica sync's touch and WAIT), which must hold one connection of one
// master: on a cluster it runs on the master's own client
// (ClusterClient.MasterForKey), whose hooks are the cluster client's
// OnNewNode hooks, not those added to the ClusterClient.
package goredis

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/go-redis/v9"
)

// Backend is a go-redis client as a [backend.Backend].
type Backend struct {
	backend.Defaults
	rdb  redis.UniversalClient
	cc   *redis.ClusterClient // rdb when it is a cluster's
	info backend.Info
}

var _ backend.Backend = (*Backend)(nil)

// New returns the back-end of rdb. It panics when rdb is nil. Closing the
// Backend is closing rdb, which stays the caller's.
func New(rdb redis.UniversalClient) *Backend {
	if rdb == nil {
		panic("goredis: New(nil): a go-redis client is required")
	}
	b := &Backend{rdb: rdb}
	b.cc, _ = rdb.(*redis.ClusterClient)
	b.info = infoOf(rdb)
	return b
}

// Client is the go-redis client.
func (b *Backend) Client() redis.UniversalClient { return b.rdb }

// Info describes the client from its options: a *redis.Client, a failover
// client and a *redis.ClusterClient batch; a Ring or another client sends
// every call alone.
func (b *Backend) Info() backend.Info { return b.info }

func infoOf(rdb redis.UniversalClient) backend.Info {
	var i backend.Info
	read, retries, backoff, known := time.Duration(0), 0, time.Duration(0), true
	switch r := rdb.(type) {
	case *redis.Client: // a failover client too
		o := r.Options()
		i = backend.Info{Name: o.Addr, ContextDeadlines: o.ContextTimeoutEnabled, Batch: true}
		read, retries, backoff = o.ReadTimeout, o.MaxRetries, o.MaxRetryBackoff
	case *redis.ClusterClient:
		o := r.Options()
		i = backend.Info{Name: strings.Join(o.Addrs, ","), Cluster: true, ContextDeadlines: o.ContextTimeoutEnabled, Batch: true}
		read, retries, backoff = o.ReadTimeout, o.MaxRetries, o.MaxRetryBackoff
	case *redis.Ring:
		o := r.Options()
		i = backend.Info{Name: "ring", ContextDeadlines: o.ContextTimeoutEnabled}
		read, known = o.ReadTimeout, false
	default:
		known = false
	}
	i.ReadTimeout = max(read, 0) // -1 and -2: no deadline on reads
	if known {
		i.Resend = resend(read, retries, backoff)
	}
	return i
}

// resend is how long go-redis may go on re-sending one command: each try
// waits for a read timeout, with a back-off between tries.
func resend(read time.Duration, retries int, backoff time.Duration) time.Duration {
	if read <= 0 {
		read = 3 * time.Second
	}
	if backoff <= 0 {
		backoff = 512 * time.Millisecond
	}
	retries = max(retries, 0)
	return time.Duration(retries+1)*read + time.Duration(retries)*backoff
}

// Process runs cmd through the client's Process.
func (b *Backend) Process(ctx context.Context, cmd *backend.Cmd) error {
	rc := newCmd(ctx, cmd)
	_ = b.rdb.Process(ctx, rc)
	return answer(cmd, rc)
}

// Pipeline runs cmds in one of the client's pipelines.
func (b *Backend) Pipeline(ctx context.Context, cmds []*backend.Cmd) error {
	return b.pipeline(ctx, b.rdb.Pipeline(), cmds)
}

func (b *Backend) pipeline(ctx context.Context, p redis.Pipeliner, cmds []*backend.Cmd) error {
	rcs := make([]*redis.Cmd, len(cmds))
	for i, c := range cmds {
		rcs[i] = newCmd(ctx, c)
		_ = p.Process(ctx, rcs[i])
	}
	_, _ = p.Exec(ctx)
	var first error
	for i, c := range cmds {
		if err := answer(c, rcs[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PipelineOn runs cmds in a pipeline of the master serving key (a
// cluster's), or of the client.
func (b *Backend) PipelineOn(ctx context.Context, key string, cmds []*backend.Cmd) error {
	if len(cmds) == 0 {
		return nil
	}
	var p redis.Pipeliner
	if b.cc != nil {
		node, err := b.cc.MasterForKey(ctx, key)
		if err != nil {
			err = convertErr(err)
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		p = node.Pipeline()
	} else {
		p = b.rdb.Pipeline()
	}
	return b.pipeline(ctx, p, cmds)
}

// NodeOf is the address of the master serving key on a cluster (the slot
// map go-redis keeps), "" for other clients.
func (b *Backend) NodeOf(ctx context.Context, key string) (string, error) {
	if b.cc == nil {
		return "", nil
	}
	node, err := b.cc.MasterForKey(ctx, key)
	if err != nil {
		return "", convertErr(err)
	}
	return node.Options().Addr, nil
}

// Refresh reloads a cluster client's slot map.
func (b *Backend) Refresh(ctx context.Context) {
	if b.cc != nil {
		b.cc.ReloadState(ctx)
	}
}

// newCmd is cmd as a go-redis command.
func newCmd(ctx context.Context, cmd *backend.Cmd) *redis.Cmd {
	rc := redis.NewCmd(ctx, cmd.Args()...)
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		rc.SetFirstKeyPos(3)
	}
	return rc
}

// answer sets cmd's reply from rc's, and returns its error.
func answer(cmd *backend.Cmd, rc *redis.Cmd) error {
	if err := rc.Err(); err != nil {
		err = convertErr(err)
		cmd.SetErr(err)
		return err
	}
	cmd.SetVal(convert(rc.Val()))
	return nil
}

// convert is a go-redis reply as the seam's: an error element as a
// backend.Error, a RESP3 map as a flat array, a RESP3 boolean as Lua's
// RESP2 conversion gives it (true 1, false nil).
func convert(v any) any {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			v[i] = convert(e)
		}
		return v
	case map[any]any:
		flat := make([]any, 0, 2*len(v))
		for k, e := range v {
			flat = append(flat, convert(k), convert(e))
		}
		return flat
	case bool:
		if v {
			return int64(1)
		}
		return nil
	case redis.Error:
		return backend.Error(v.Error())
	}
	return v
}

// convertErr is a go-redis error as the seam's: a nil reply as backend.ErrNil,
// an error reply as a backend.Error, a closed client's as backend.ErrClosed
// (joined with go-redis's); network and context errors as they are.
func convertErr(err error) error {
	var re redis.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return backend.ErrNil
	case errors.Is(err, redis.ErrClosed):
		return errors.Join(backend.ErrClosed, err)
	case errors.As(err, &re):
		return backend.Error(re.Error())
	}
	return err
}
