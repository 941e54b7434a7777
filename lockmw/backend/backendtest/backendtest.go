// Package backendtest is the conformance suite of lockmw's back-end seam
// (package lockmw/backend), in the way of testing/fstest: a back-end's
// tests call Run with a back-end connected to a running Redis (a single
// node, a Sentinel group's master or a cluster) and the suite checks every
// part of the contract lockmw relies on — replies and their types, error
// classes as values, pipelines, contexts, pub/sub, routing on a cluster,
// PipelineOn — and then runs lockmw's lock kinds on it (a mutex handed
// over between waiters, a semaphore, a read-write lock).
//
// The suite writes keys of its own only (hash-tagged "{rlock-backendtest:…}"
// with a random part) and deletes none it did not write: it may run on a
// server other tests share. Capabilities the back-end leaves to
// backend.Defaults (errors.ErrUnsupported) are skipped, with a log line.
package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// Run runs the conformance suite on b as subtests of t.
func Run(t *testing.T, b backend.Backend) {
	t.Helper()
	s := &suite{b: b, prefix: "{rlock-backendtest:" + nonce() + "}:"}
	t.Run("Info", s.info)
	t.Run("Replies", s.replies)
	t.Run("ErrorClasses", s.errorClasses)
	t.Run("Scripts", s.scripts)
	t.Run("Pipeline", s.pipeline)
	t.Run("PipelineAcrossSlots", s.pipelineAcrossSlots)
	t.Run("Concurrent", s.concurrent)
	t.Run("Context", s.context)
	t.Run("Subscribe", func(t *testing.T) { s.subscribe(t, false) })
	t.Run("SubscribeSharded", func(t *testing.T) { s.subscribe(t, true) })
	t.Run("NodeOf", s.nodeOf)
	t.Run("PipelineOn", s.pipelineOn)
	t.Run("Locks", s.locks)
}

type suite struct {
	b      backend.Backend
	prefix string
}

func nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// key is a key of the suite's, in its one hash slot.
func (s *suite) key(name string) string { return s.prefix + name }

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// do runs one command and fails t on a transport error (not on an error
// reply, which the caller checks).
func (s *suite) do(t *testing.T, ctx context.Context, args ...any) *backend.Cmd {
	t.Helper()
	cmd := backend.NewCmd(args...)
	err := s.b.Process(ctx, cmd)
	if err != cmd.Err() {
		t.Fatalf("Process(%v) returned %v, but the command's error is %v", args, err, cmd.Err())
	}
	return cmd
}

func (s *suite) info(t *testing.T) {
	i := s.b.Info()
	if i.ReadTimeout < 0 || i.Resend < 0 {
		t.Errorf("Info() = %+v: durations must not be negative", i)
	}
	t.Logf("Info() = %+v", i)
}

func (s *suite) replies(t *testing.T) {
	ctx := ctxOf(t)
	if v, err := s.do(t, ctx, "ping").Text(); err != nil || v != "PONG" {
		t.Errorf("PING = %q, %v; want PONG", v, err)
	}
	k := s.key("str")
	if err := s.do(t, ctx, "set", k, "v1", "px", 60000).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if v, err := s.do(t, ctx, "get", k).Text(); err != nil || v != "v1" {
		t.Errorf("GET = %q, %v; want v1", v, err)
	}
	if n, err := s.do(t, ctx, "pttl", k).Int64(); err != nil || n <= 0 || n > 60000 {
		t.Errorf("PTTL = %d, %v; want an integer in (0, 60000]", n, err)
	}
	if err := s.do(t, ctx, "get", s.key("missing")).Err(); !errors.Is(err, backend.ErrNil) {
		t.Errorf("GET of a missing key: error %v, want backend.ErrNil", err)
	}
	h := s.key("hash")
	if err := s.do(t, ctx, "hset", h, "f1", "a", "f2", "b").Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	s.do(t, ctx, "pexpire", h, 60000)
	kv, err := s.do(t, ctx, "hgetall", h).Slice()
	if err != nil || len(kv) != 4 {
		t.Fatalf("HGETALL = %v, %v; want a flat array of 4 (a map is key, value…)", kv, err)
	}
	got := map[any]any{kv[0]: kv[1], kv[2]: kv[3]}
	if got["f1"] != "a" || got["f2"] != "b" {
		t.Errorf("HGETALL = %v; want f1 a f2 b as strings", kv)
	}
	if n, err := s.do(t, ctx, "exists", h, s.key("missing")).Int64(); err != nil || n != 1 {
		t.Errorf("EXISTS = %d, %v; want 1", n, err)
	}
}

func (s *suite) errorClasses(t *testing.T) {
	ctx := ctxOf(t)
	k := s.key("wrongtype")
	s.do(t, ctx, "set", k, "x", "px", 60000)
	err := s.do(t, ctx, "hget", k, "f").Err()
	if !backend.IsWrongType(err) || !backend.IsServerError(err) {
		t.Errorf("HGET on a string: error %#v, want a backend.Error classed by IsWrongType", err)
	}
	err = s.do(t, ctx, "evalsha", strings.Repeat("0", 40), 0).Err()
	if !backend.IsNoScript(err) {
		t.Errorf("EVALSHA of an unknown script: error %#v, want IsNoScript", err)
	}
	dump, err := s.do(t, ctx, "dump", k).Text()
	if err != nil {
		t.Fatalf("DUMP: %v", err)
	}
	if err := s.do(t, ctx, "restore", k, 60000, dump).Err(); !backend.IsBusyKey(err) {
		t.Errorf("RESTORE onto an existing key: error %#v, want IsBusyKey", err)
	}
	if err := s.do(t, ctx, "restore", s.key("restored"), 60000, dump).Err(); err != nil {
		t.Errorf("RESTORE of a DUMP payload: %v", err)
	}
}

func (s *suite) scripts(t *testing.T) {
	ctx := ctxOf(t)
	sc := backend.NewScript(`return {1, "two", redis.pcall("hget", KEYS[1], "f"), {3}, true, ARGV[1]}`)
	k := s.key("script")
	s.do(t, ctx, "set", k, "x", "px", 60000)
	if err := s.do(t, ctx, "evalsha", sc.SHA(), 1, k, "arg").Err(); !backend.IsNoScript(err) {
		t.Fatalf("EVALSHA before the script is known: %v, want NOSCRIPT", err)
	}
	for _, line := range [][]any{{"eval", sc.Source(), 1, k, "arg"}, {"evalsha", sc.SHA(), 1, k, "arg"}} {
		v, err := s.do(t, ctx, line...).Slice()
		if err != nil || len(v) != 6 {
			t.Fatalf("%s = %v, %v; want an array of 6", line[0], v, err)
		}
		if v[0] != int64(1) || v[1] != "two" || v[4] != int64(1) || v[5] != "arg" {
			t.Errorf("%s = %#v; want 1, \"two\", _, _, 1 (Lua true), \"arg\"", line[0], v)
		}
		if !backend.IsWrongType(asErr(v[2])) {
			t.Errorf("%s: element 3 = %#v, want the pcall's WRONGTYPE as a backend.Error", line[0], v[2])
		}
		if inner, ok := v[3].([]any); !ok || len(inner) != 1 || inner[0] != int64(3) {
			t.Errorf("%s: element 4 = %#v, want []any{int64(3)}", line[0], v[3])
		}
	}
	if err := s.do(t, ctx, "eval", "return false", 0).Err(); !errors.Is(err, backend.ErrNil) {
		t.Errorf("a script returning false: error %v, want backend.ErrNil (Lua false is a nil reply)", err)
	}
	if err := s.do(t, ctx, "eval", "return redis.error_reply('BUSYKEY nope')", 0).Err(); !backend.IsBusyKey(err) {
		t.Errorf("a script's error reply: %#v, want a backend.Error classed by its prefix", err)
	}
}

func asErr(v any) error {
	err, _ := v.(error)
	return err
}

func (s *suite) pipeline(t *testing.T) {
	ctx := ctxOf(t)
	k := s.key("counter")
	cmds := []*backend.Cmd{
		backend.NewCmd("incr", k),
		backend.NewCmd("pexpire", k, 60000),
		backend.NewCmd("hget", k, "f"), // WRONGTYPE: its own error only
		backend.NewCmd("incr", k),
		backend.NewCmd("get", s.key("missing")),
	}
	err := s.b.Pipeline(ctx, cmds)
	if err == nil || !backend.IsWrongType(err) {
		t.Errorf("Pipeline returned %v, want the first error (WRONGTYPE)", err)
	}
	if n, err := cmds[0].Int64(); err != nil || n != 1 {
		t.Errorf("first INCR = %d, %v; want 1", n, err)
	}
	if !backend.IsWrongType(cmds[2].Err()) {
		t.Errorf("HGET on a counter: %v, want WRONGTYPE", cmds[2].Err())
	}
	if n, err := cmds[3].Int64(); err != nil || n != 2 {
		t.Errorf("second INCR = %d, %v; want 2 (in order, after the failed command)", n, err)
	}
	if !errors.Is(cmds[4].Err(), backend.ErrNil) {
		t.Errorf("GET of a missing key in a pipeline: %v, want backend.ErrNil", cmds[4].Err())
	}
}

// pipelineAcrossSlots: on a cluster one pipeline's commands go to their
// slots' masters, each with its own reply.
func (s *suite) pipelineAcrossSlots(t *testing.T) {
	ctx := ctxOf(t)
	var cmds []*backend.Cmd
	for i := range 32 {
		k := fmt.Sprintf("{rlock-backendtest:%s:%d}", s.prefix, i)
		cmds = append(cmds, backend.NewCmd("set", k, i, "px", 60000), backend.NewCmd("get", k))
	}
	if err := s.b.Pipeline(ctx, cmds); err != nil {
		t.Fatalf("Pipeline over 32 slots: %v", err)
	}
	for i := range 32 {
		if v, err := cmds[2*i+1].Text(); err != nil || v != fmt.Sprint(i) {
			t.Errorf("GET %d = %q, %v", i, v, err)
		}
	}
}

func (s *suite) concurrent(t *testing.T) {
	ctx := ctxOf(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			k := s.key(fmt.Sprint("c", g))
			for i := range 20 {
				if i%2 == 0 {
					cmd := backend.NewCmd("set", k, fmt.Sprint(g, "-", i), "px", 60000)
					if err := s.b.Process(ctx, cmd); err != nil {
						t.Errorf("SET: %v", err)
						return
					}
					continue
				}
				get := backend.NewCmd("get", k)
				if err := s.b.Pipeline(ctx, []*backend.Cmd{get}); err != nil {
					t.Errorf("GET: %v", err)
					return
				}
				if v, _ := get.Text(); v != fmt.Sprint(g, "-", i-1) {
					t.Errorf("goroutine %d read %q, want its own last write", g, v)
					return
				}
			}
		})
	}
	wg.Wait()
}

func (s *suite) context(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := backend.NewCmd("ping")
	if err := s.b.Process(ctx, cmd); !errors.Is(err, context.Canceled) {
		t.Errorf("Process on a cancelled context: %v, want an error matching context.Canceled", err)
	}
	cmds := []*backend.Cmd{backend.NewCmd("ping")}
	if err := s.b.Pipeline(ctx, cmds); !errors.Is(err, context.Canceled) || !errors.Is(cmds[0].Err(), context.Canceled) {
		t.Errorf("Pipeline on a cancelled context: %v (command: %v), want context.Canceled", err, cmds[0].Err())
	}
}

func (s *suite) subscribe(t *testing.T, sharded bool) {
	ctx := ctxOf(t)
	if sharded && !s.serverAtLeast(t, 7) {
		t.Skip("sharded pub/sub needs Redis 7")
	}
	ch, other := s.key("chan"), s.key("other")
	sub, err := s.b.Subscribe(ctx, sharded, ch)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("Subscribe is not offered: lockmw's waiters poll")
	}
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer func() { _ = sub.Close() }()
	publish := "publish"
	if sharded {
		publish = "spublish"
	}
	expect := func(kind backend.MessageKind, channel, payload string) {
		t.Helper()
		m, err := sub.Receive(ctx)
		if err != nil || m.Kind != kind || m.Channel != channel || m.Payload != payload {
			t.Fatalf("Receive = %+v, %v; want kind %d on %q with %q", m, err, kind, channel, payload)
		}
	}
	expect(backend.Subscribed, ch, "")
	s.do(t, ctx, publish, ch, "hello")
	expect(backend.Published, ch, "hello")
	if err := sub.Subscribe(ctx, other); err != nil {
		t.Fatalf("Subscribe on the subscription: %v", err)
	}
	expect(backend.Subscribed, other, "")
	if err := sub.Unsubscribe(ctx, ch); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	expect(backend.Unsubscribed, ch, "")
	s.do(t, ctx, publish, ch, "not for us")
	s.do(t, ctx, publish, other, "second")
	expect(backend.Published, other, "second")

	done := make(chan error, 1)
	go func() {
		_, err := sub.Receive(ctx)
		done <- err
	}()
	_ = sub.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Receive after Close returned no error")
		}
	case <-ctx.Done():
		t.Errorf("Receive under way did not return at Close")
	}
}

// serverAtLeast reports whether the server's major version is at least major.
func (s *suite) serverAtLeast(t *testing.T, major int) bool {
	info, err := s.do(t, ctxOf(t), "info", "server").Text()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			var m int
			_, _ = fmt.Sscanf(v, "%d", &m)
			return m >= major
		}
	}
	return false
}

func (s *suite) nodeOf(t *testing.T) {
	ctx := ctxOf(t)
	nodes := map[string]bool{}
	for i := range 64 {
		k := fmt.Sprintf("{rlock-backendtest:%d}", i)
		n, err := s.b.NodeOf(ctx, k)
		if err != nil {
			t.Fatalf("NodeOf(%q): %v", k, err)
		}
		if again, _ := s.b.NodeOf(ctx, k); again != n {
			t.Errorf("NodeOf(%q) = %q, then %q", k, n, again)
		}
		nodes[n] = true
	}
	s.b.Refresh(ctx)
	switch cluster := s.b.Info().Cluster; {
	case !cluster && (len(nodes) != 1 || !nodes[""]):
		t.Errorf("NodeOf on a client that is not a cluster's named %v, want \"\" only", nodes)
	case cluster && (nodes[""] || len(nodes) < 2):
		t.Errorf("NodeOf on a cluster named %v for 64 slots, want the masters' addresses", nodes)
	}
}

func (s *suite) pipelineOn(t *testing.T) {
	ctx := ctxOf(t)
	k := s.key("waited")
	set, wait := backend.NewCmd("set", k, "x", "px", 60000), backend.NewCmd("wait", 0, 100)
	err := s.b.PipelineOn(ctx, k, []*backend.Cmd{set, wait})
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("PipelineOn is not offered: WithReplicaSync is refused")
	}
	if err != nil {
		t.Fatalf("PipelineOn: %v", err)
	}
	if n, err := wait.Int64(); err != nil || n < 0 {
		t.Errorf("WAIT on the SET's connection = %d, %v", n, err)
	}
}
