package lockmw

import (
	"context"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/rdbdump"
	"github.com/go-rlock/rlock/lockmw/internal/rediserr"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// The fast path: a lock nobody else wants is taken with one RESTORE of a
// ready-made lock hash instead of the acquire script, which also names the
// holder and queues waiters. Redis runs a script's keys, arguments and
// commands at a few thousand instructions each; RESTORE creates the hash and
// its TTL in one plain command, and fails with BUSYKEY when the lock exists.
// The acquire script takes over at the first sign of contention, so that a
// waiter is queued in the same round trip as before. Such a lock is freed by
// fastrelease.lua, release.lua without the hand-off: 8 keys and arguments
// instead of 14, the queue looked at with EXISTS and Redisson's waiters with
// PUBSUB NUMSUB, no script library to set up. It leaves a lock with waiters
// (rlock's or Redisson's) to release.lua, and that too is contention.
//
// RESTORE is an ordinary write (ACL category @dangerous, though): a server
// that refuses it (a missing permission, an unknown payload version) turns
// the fast acquisition off for the Client, which then uses the scripts.

// fastAcquire tries the lock with RESTORE. won is false when the lock
// exists (or the fast path is off): the caller then runs the acquire script,
// which tells who holds it, queues the waiter, or finds that an earlier,
// re-sent RESTORE of this very field won.
func (m *Mutex) fastAcquire(ctx context.Context, a attempt) (won bool, err error) {
	c := m.c
	if !c.fastChecked.Load() {
		if ok, err := c.probeRestore(ctx); !ok {
			return false, err
		}
	}
	r := restoreLines.Get().(*restoreLine)
	r.dump = rdbdump.Append(r.buf[:0], a.field, rdbdump.Kind(c.dumpKind.Load()))
	r.args = [...]any{"restore", m.keyArgs[0], c.ttlArg(a.ttl), r}
	cmd := scripts.GetCmd(r.args[:])
	if err := c.proc.Process(ctx, cmd); scripts.InFlight(err) {
		return false, err // the caller gave up: its abandon undoes a late win (r and cmd stay the pipeline's)
	}
	err = cmd.Err()
	scripts.PutCmd(cmd)
	r.args = [4]any{}
	restoreLines.Put(r)
	switch {
	case err == nil:
		return true, nil
	case backend.IsBusyKey(err):
		// Not contention yet: a RESTORE that go-redis sent again after a
		// lost reply finds the lock its first copy made. The acquire script
		// tells, and the engine remembers a busy reply.
		return false, nil
	case rediserr.RefusesRestore(err):
		// Refused for good (ACL, an old server, a proxy that does not
		// know it): the scripts do the same work.
		c.turnFastOff("RESTORE refused: " + err.Error())
		return false, nil
	case rediserr.IsServerError(err):
		return false, nil // LOADING, READONLY, OOM...: the script gets its own answer
	}
	return false, err
}

// restoreLine is the command line of fastAcquire's RESTORE, with room for
// the payload of a field of less than 64 bytes (an rlock field is about 40). It
// is its own payload argument: a pointer in an interface value costs no
// allocation, where a []byte would. Lines are pooled (restoreLines): one is
// needed only while its command is under way, and kept in each hold it
// would cost every held lock its 168 bytes. A line whose caller gave up in
// flight stays with its pipeline (the garbage collector takes it).
type restoreLine struct {
	args [4]any
	dump []byte // the payload, in buf when it fits
	buf  [rdbdump.Overhead + 63]byte
}

// restoreLines holds the restoreLines not in use.
var restoreLines = sync.Pool{New: func() any { return new(restoreLine) }}

// MarshalBinary is the payload, as go-redis writes the argument.
func (r *restoreLine) MarshalBinary() ([]byte, error) { return r.dump, nil }

// String is the payload, as hooks that print a command show it.
func (r *restoreLine) String() string { return string(r.dump) }

// fastrelease.lua's replies.
const (
	fastReleased       = 1 // the lock is free
	fastReleaseWaiters = 3 // waiters are queued or subscribed: contention
	fastReleaseNotAsIs = 4 // the hold is not as the caller thinks (a re-send that already ran, a loss, a count above 1)
)

// fastRelease is the first try of an uncontended last Unlock: the short
// script fastrelease.lua, which frees the lock when Redis counts one level,
// nobody is queued and no Redisson waiter is subscribed. done is false when it
// changed nothing (waiters are queued or subscribed, or the hold is not as the
// caller thinks): release.lua then decides, with the same latch. Waiters
// mean contention: the name's group releases with release.lua at once for a
// while, as it acquires with the script. A hold not as the caller thinks is
// not: it is a re-send of this script whose first copy freed the lock (the
// latch answers it), or a loss.
func (m *Mutex) fastRelease(ctx context.Context, h *hold, lvl *level) (done bool, err error) {
	c := m.c
	args := append(lvl.releaseLine(fastReleaseArgs), "evalsha", scripts.FastReleaseSHA, 5,
		(*levelLatch)(lvl), m.keyArgs[0], m.keyArgs[1], m.keyArgs[2], m.rollArg,
		c.publishArg(ctx), c.latchArg, h.fieldArg)
	n, err := scripts.RunInt64(ctx, c.proc, scripts.FastReleaseSrc, args)
	if err != nil {
		return false, err
	}
	switch n {
	case fastReleased:
		return true, nil
	case fastReleaseWaiters:
		c.contention.seen(m.hot)
	case fastReleaseNotAsIs:
		// No contention: release.lua answers a re-send from the latch, or
		// reports the loss.
	}
	return false, nil
}

// probeRestore checks, once per Client, that the server makes a hash of
// lockDump's payload: it restores one on a key of its own, reads its type and
// deletes it, in one pipeline, and picks the payload's encoding: a listpack
// (Redis 7 and later), else the plain hash when the server refuses that
// (an older server: the RDB version is newer than its own). A server that
// refuses RESTORE, or stores the payload as something else (miniredis keeps
// it as a string), turns the fast acquisition off. ok is false when the fast
// path must not be taken now.
//
// One probe runs at a time: the key is the Client's, and concurrent probes
// interleave (one's DEL before another's TYPE reads "none", and the fast
// path was turned off for the Client's life when a service started with
// many callers at once). A caller that finds a probe under way takes the
// scripts this once.
func (c *Client) probeRestore(ctx context.Context) (ok bool, err error) {
	if !c.probing.CompareAndSwap(false, true) {
		return false, nil
	}
	defer c.probing.Store(false)
	if c.fastChecked.Load() { // a probe that ended meanwhile settled it
		return !c.fastOff.Load(), nil
	}
	var why string
	for _, kind := range []rdbdump.Kind{rdbdump.Listpack, rdbdump.Plain} {
		var payload bool
		if why, payload, err = c.probeDump(ctx, kind); !payload {
			break
		}
	}
	switch {
	case err != nil && !rediserr.IsServerError(err):
		return false, err // the network: the caller fails as the script would
	case err != nil:
		return false, nil // ask again next time
	case why != "":
		c.turnFastOff(why)
		return false, nil
	}
	c.fastChecked.Store(true)
	return true, nil
}

// probeDump restores a payload of kind on the Client's probe key. why says
// why the server does not take it ("" when it made a hash, and kind is now
// the Client's), and payload whether it refused the payload itself (another
// encoding may do); err is an error of the network or a transient one of
// the server (ask again later).
func (c *Client) probeDump(ctx context.Context, kind rdbdump.Kind) (why string, payload bool, err error) {
	key := c.ns + "rlock_probe:{" + c.nonce + "}"
	typ := backend.NewCmd("type", key)
	err = c.be.Pipeline(ctx, []*backend.Cmd{
		backend.NewCmd("restore", key, time.Second.Milliseconds(), string(rdbdump.Payload(c.id+":0", kind)), "replace"),
		typ,
		backend.NewCmd("del", key),
	})
	t, _ := typ.Text()
	switch {
	case err != nil && (!rediserr.IsServerError(err) || rediserr.IsTransient(err)):
		return "", false, err
	case err != nil:
		return "RESTORE refused: " + err.Error(), rediserr.RefusesPayload(err), nil
	case t != "hash":
		return "RESTORE made a " + t + ", not a hash", false, nil
	}
	c.dumpKind.Store(uint32(kind))
	return "", false, nil
}

// turnFastOff makes the Client acquire with the scripts only, logging why once.
func (c *Client) turnFastOff(why string) {
	if c.fastOff.CompareAndSwap(false, true) {
		c.log.Info("lockmw: acquiring with scripts only", "why", why)
	}
}

// useFastAcquire reports whether a new acquisition on a single Redis tries
// RESTORE first (singleStore.acquireFirst).
func (m *Mutex) useFastAcquire() bool {
	return !m.fenced && !m.c.fastOff.Load() && !m.c.contention.recent(m.hot)
}
