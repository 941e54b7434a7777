package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// singleStore keeps the locks on one Redis: a single node, a failover
// (Sentinel) client or a cluster. Its hot paths (the acquire and release
// scripts) send command lines of arguments boxed once (see scripts.Run).
type singleStore struct {
	c   *Client
	be  backend.Backend
	rtt rttGauge // of the release scripts: the window of a reservation (reserve.go)
}

// nodes returns the one Redis.
func (s *singleStore) nodes() []backend.Backend { return []backend.Backend{s.be} }

// majority is 1: the one Redis decides.
func (s *singleStore) majority() int { return 1 }

// acquireFirst tries RESTORE first when the fast path may be taken, and the
// acquire script otherwise or when RESTORE did not win (the lock exists; a
// re-sent RESTORE of this field won: the script tells which). A win by
// RESTORE has no token: fenced mutexes never take the fast path.
func (s *singleStore) acquireFirst(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	if m.useFastAcquire() {
		won, err := m.fastAcquire(ctx, a)
		if err != nil {
			return acquireReply{}, fmt.Errorf("lockmw: acquire %q: %w", m.name, err)
		}
		if won {
			return acquireReply{won: true}, nil
		}
	}
	return s.tryAcquire(ctx, m, a)
}

// tryAcquire runs acquire.lua from a command line of boxed arguments.
func (s *singleStore) tryAcquire(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	c := s.c
	n := 15 // the counter's TTL only for a fenced mutex: 15 make a smaller size class
	if m.fenced {
		n = 16
	}
	args := append(make([]any, 0, n), "evalsha", scripts.AcquireSHA, len(m.keyArgs))
	args = append(args, m.keyArgs...)
	args = append(args, c.ttlArg(a.ttl), a.fieldArg, flag(a.enqueue), c.graceArg, flag(m.fenced), flag(a.queued), c.claimArg(a.ttl))
	if m.fenced {
		args = append(args, c.tokenTTLArg)
	}
	if a.enqueue || a.queued { // it may have to leave a reserved lock alone
		if gen := c.usedReservation(&m.k); gen != "" {
			if !m.fenced {
				args = append(args, "")
			}
			args = append(args, gen)
		}
	}
	res, err := scripts.RunSlice(ctx, c.proc, scripts.AcquireSrc, args)
	if err != nil {
		return acquireReply{}, fmt.Errorf("lockmw: acquire %q: %w", m.name, err)
	}
	r, err := parseAcquire(res)
	if err != nil {
		return r, fmt.Errorf("lockmw: acquire %q: %w", m.name, err)
	}
	return r, nil
}

// claim runs claim.lua.
func (s *singleStore) claim(ctx context.Context, m *Mutex, a attempt) (int64, bool) {
	res, err := scripts.Eval(ctx, s.c.be, scripts.Claim, []string{m.k.lock}, a.field, s.c.ttlArg(a.ttl)).Slice()
	if err != nil || len(res) < 2 || asInt(res[0]) != 1 {
		return 0, false
	}
	return asInt(res[1]), true
}

// reenter runs reenter.lua.
func (s *singleStore) reenter(ctx context.Context, m *Mutex, field, reqID string) (int64, error) {
	return scripts.Eval(ctx, s.c.be, scripts.Reenter, []string{m.k.lock, m.k.latchBase + reqID}, field, s.c.latchArg).Int64()
}

// undoReenter runs unreenter.lua.
func (s *singleStore) undoReenter(ctx context.Context, m *Mutex, field, reqID string) error {
	return scripts.Eval(ctx, s.c.be, scripts.Unreenter, []string{m.k.lock, m.k.latchBase + reqID}, field, s.c.latchArg).Err()
}

// release runs the short script first for an uncontended last level (see
// fastRelease), release.lua otherwise.
func (s *singleStore) release(ctx context.Context, m *Mutex, r releaseReq) (int64, error) {
	c := s.c
	if r.expireMS == 0 && r.last && !c.contention.recent(m.hot) {
		sent := time.Now()
		done, err := m.fastRelease(ctx, r.h, r.lvl)
		if err != nil {
			return 0, err
		}
		s.rtt.observe(time.Since(sent))
		if done {
			return 1, nil
		}
	}
	args := append(make([]any, 0, 20), "evalsha", scripts.ReleaseSHA, len(m.keyArgs)+2)
	args = append(args, m.keyArgs...)
	args = append(args, r.lvl.latchArg, m.rollArg)
	run, at := r.lvl.ran.of()
	if run != "" {
		args = append(args, run) // the merged run's latch (batchmerge.go)
		args[2] = len(m.keyArgs) + 3
	}
	args = append(args, r.h.fieldArg, c.publishArg(ctx), c.latchArg, expireArg(r.expireMS), flag(r.last), c.tokenTTLArg, s.rtt.windowMS())
	if run != "" {
		args = append(args, int64(at)) // a type the seam carries (backend.ArgString has no int32)
	}
	sent := time.Now()
	n, err := scripts.RunInt64(ctx, c.proc, scripts.ReleaseSrc, args)
	if err == nil {
		s.rtt.observe(time.Since(sent))
	}
	return n, err
}

// leave runs leave.lua, which publishes a hand-off it passes on.
func (s *singleStore) leave(ctx context.Context, m *Mutex, field string, keep bool, ttl time.Duration) (int64, bool, error) {
	c := s.c
	res, err := scripts.Eval(ctx, s.c.be, scripts.Leave, m.fullKeys("leave"), field, c.publishCmd(ctx), flag(keep), c.ttlArg(ttl), c.tokenTTLArg).Slice()
	if err != nil {
		c.log.Warn("lockmw: leaving the wait queue failed", "name", m.name, "field", field, "err", err)
		return 0, false, err
	}
	if len(res) >= 2 && asInt(res[0]) == 1 {
		return asInt(res[1]), true, nil
	}
	return 0, false, nil
}

// forceUnlock runs forceunlock.lua.
func (s *singleStore) forceUnlock(ctx context.Context, m *Mutex) (bool, error) {
	n, err := scripts.Eval(ctx, s.c.be, scripts.ForceUnlock, m.fullKeys("force"), s.c.publishCmd(ctx), s.c.tokenTTLArg).Int64()
	if err != nil {
		return false, fmt.Errorf("lockmw: force unlock %q: %w", m.name, err)
	}
	return n == 1, nil
}

// isLocked asks EXISTS.
func (s *singleStore) isLocked(ctx context.Context, m *Mutex) (bool, error) {
	return exists(ctx, s.be, m.k.lock)
}

// holdCount reads field's count.
func (s *singleStore) holdCount(ctx context.Context, m *Mutex, field string) (int, error) {
	n, err := readCount(ctx, s.be, m.k.lock, field)
	return int(n), err
}

// pttl asks PTTL: 0 when there is no key, -1 when it has no expiry.
func (s *singleStore) pttl(ctx context.Context, m *Mutex) (time.Duration, error) {
	d, err := pttlOf(ctx, s.be, m.k.lock)
	if err != nil {
		return 0, err
	}
	switch d {
	case -2: // no key
		return 0, nil
	case -1: // no expiry
		return -1, nil
	}
	return d, nil
}

// runBatches runs the calls in one pipeline.
func (s *singleStore) runBatches(ctx context.Context, sc backend.Script, calls []scripts.Call) [][]*backend.Cmd {
	return [][]*backend.Cmd{scripts.RunPipelined(ctx, s.be, sc, calls)}
}

// readCount reads field's reentrancy count in the lock hash key: 0 when
// there is none.
func readCount(ctx context.Context, b backend.Backend, key, field string) (int64, error) {
	cmd := backend.NewCmd("hget", key, field)
	_ = b.Process(ctx, cmd)
	n, err := cmd.Int64()
	if errors.Is(err, backend.ErrNil) {
		return 0, nil
	}
	return n, err
}

// exists asks EXISTS of key.
func exists(ctx context.Context, b backend.Backend, key string) (bool, error) {
	n, err := existsCount(ctx, b, key)
	return n == 1, err
}

// existsCount is EXISTS's reply: 1 when key exists, else 0.
func existsCount(ctx context.Context, b backend.Backend, key string) (int64, error) {
	cmd := backend.NewCmd("exists", key)
	_ = b.Process(ctx, cmd)
	return cmd.Int64()
}

// pttlOf asks PTTL of key: -2 when there is no key, -1 when it has no
// expiry (as go-redis's DurationCmd gives them), else the time left.
func pttlOf(ctx context.Context, b backend.Backend, key string) (time.Duration, error) {
	cmd := backend.NewCmd("pttl", key)
	_ = b.Process(ctx, cmd)
	return msDuration(cmd.Int64())
}

// msDuration is a PTTL reply as a duration (-1 and -2 as they are).
func msDuration(ms int64, err error) (time.Duration, error) {
	if err != nil || ms < 0 {
		return time.Duration(ms), err
	}
	return time.Duration(ms) * time.Millisecond, nil
}
