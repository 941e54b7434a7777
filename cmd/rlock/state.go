package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/redis/go-redis/v9"
)

// Kinds of name.
const (
	kindLock      = "lock"
	kindSemaphore = "semaphore"
	kindRWLock    = "rwlock" // a read-write lock (Redisson's RReadWriteLock, lockmw's RWMutex)
)

// state is what Redis holds for one name, read at one instant (MULTI).
type state struct {
	name    string    // as the application gave it
	ns      namespace // -namespace
	key     string    // the lock key: ns.key(name)
	kind    string    // kindLock, kindSemaphore, kindRWLock, or "" for none
	why     string    // with kind "": what the key is instead ("" when absent)
	nowMS   int64     // the server's clock, in ms
	ttlMS   int64     // the lock key's PTTL: -1 no expiry, -2 no key
	lock    lockHash
	mode    string   // a read-write lock's: "read" or "write"
	holders []holder // a lock's holder fields (a read-write lock's writer first), or a semaphore's permits not expired
	expired []holder // a semaphore's permits past their expiry, not yet reclaimed
	free    int64    // a semaphore's free permits
	waiters []waiter // rlock's queue, in order
	open    int64    // rlock:open: until when, at most, a lock or a permit is reserved for Redisson's waiters
}

// holder is one holder field of a lock or one permit of a semaphore.
type holder struct {
	Field     string // the hash field or the permit's member (Redisson's: hex)
	Client    string // the client ID part of an "<id>:<n>" field
	Count     int64  // a lock's hold count (reentrancy)
	ExpiresMS int64  // a permit's expiry in server ms; -1 never (for a lock: the key's TTL)
	Side      string // a read-write lock's: "read" or "write"
	// Meta is the metadata stored with the hold (a traceparent from
	// otelhooks): a mutex's rlock:meta, or a semaphore's or read-write
	// lock's entry of the hash layout.Keys.Meta; "" when none.
	Meta string
	// LevelsMS, for a reader of a read-write lock, is the PTTL of the
	// timeout key of each of its levels (1 to Count; -2 missing, -1 no
	// expiry); nil when not read.
	LevelsMS []int64
	member   string // a permit's member as stored (Field may be its hex)
}

// waiter is one entry of rlock's waiter queue.
type waiter struct {
	Field      string
	Client     string
	Side       string // a read-write lock's waiter: "read" or "write"
	DeadlineMS int64  // until when the entry lives (server ms); 0 when unknown
	TTLMS      int64  // the TTL its hold gets
	ClaimMS    int64  // how long a hand-off waits for it to claim the lock
	Fenced     bool   // it takes a fencing token
}

// nodeFor returns the client of the node that serves name: on a cluster its
// slot's master (so that MULTI and TIME go there), else rdb.
func nodeFor(ctx context.Context, rdb redis.UniversalClient, name string) (redis.UniversalClient, error) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, name)
	}
	return rdb, nil
}

// readState reads name in the namespace ns: its type and size first, then
// everything in one MULTI on the node that serves it (read again if the type
// changed between).
func readState(ctx context.Context, rdb redis.UniversalClient, ns namespace, name string) (*state, error) {
	key := ns.key(name)
	node, err := nodeFor(ctx, rdb, key)
	if err != nil {
		return nil, err
	}
	for range 3 {
		typ, size, err := probe(ctx, node, key)
		if err != nil {
			return nil, err
		}
		s, ok, err := readAs(ctx, node, &state{name: name, ns: ns, key: key}, typ, size)
		if err != nil || ok {
			return s, err
		}
	}
	return nil, fmt.Errorf("%s: its type kept changing while being read", name)
}

// probe returns name's type and its size (fields of a hash, bytes of a
// string), so that a big key that cannot be a lock is not read whole.
func probe(ctx context.Context, node redis.UniversalClient, name string) (string, int64, error) {
	p := node.Pipeline()
	typ := p.Type(ctx, name)
	hlen := p.HLen(ctx, name)
	slen := p.StrLen(ctx, name)
	if _, err := p.Exec(ctx); err != nil && !isReply(err) {
		return "", 0, err
	}
	if err := typ.Err(); err != nil {
		return "", 0, err
	}
	switch typ.Val() {
	case "hash":
		return "hash", hlen.Val(), nil
	case "string":
		return "string", slen.Val(), nil
	}
	return typ.Val(), 0, nil
}

// isReply reports whether err is the server's answer to one command (such
// as WRONGTYPE), not a failure of the connection.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// reads are the commands of one MULTI of readAs.
type reads struct {
	now     *redis.TimeCmd
	typ     *redis.StatusCmd
	pttl    *redis.DurationCmd
	hash    *redis.MapStringStringCmd
	count   *redis.StringCmd
	permits *redis.ZSliceCmd
	queue   *redis.ZSliceCmd
	table   *redis.MapStringStringCmd
}

// readAs reads s's lock key as a key of type typ in one MULTI, filling s;
// ok false when its type changed meanwhile.
func readAs(ctx context.Context, node redis.UniversalClient, s *state, typ string, size int64) (*state, bool, error) {
	k := s.ns.semaphore(s.name) // the queue and table are named alike for every kind
	key := s.key
	var r reads
	_, err := node.TxPipelined(ctx, func(p redis.Pipeliner) error {
		r.now = p.Time(ctx)
		r.typ = p.Type(ctx, key)
		r.pttl = p.PTTL(ctx, key)
		switch {
		case typ == "hash" && size <= maxLockFields:
			r.hash = p.HGetAll(ctx, key)
		case typ == "string" && size <= maxCountLen:
			r.count = p.GetRange(ctx, key, 0, maxCountLen)
		}
		r.permits = p.ZRangeWithScores(ctx, k.Permits, 0, -1)
		r.queue = p.ZRangeWithScores(ctx, k.Queue, 0, -1)
		r.table = p.HGetAll(ctx, k.Waiters)
		return nil
	})
	if err != nil && !isReply(err) {
		return nil, false, err
	}
	if err := r.typ.Err(); err != nil {
		return nil, false, err
	}
	if r.typ.Val() != typ {
		return nil, false, nil
	}
	s.nowMS, s.ttlMS = r.now.Val().UnixMilli(), pttlMS(r.pttl.Val())
	s.classify(typ, size, &r)
	s.readQueue(r.queue.Val(), r.table.Val())
	if s.kind == kindRWLock {
		if err := s.readLevels(ctx, node, r.hash.Val()); err != nil {
			return nil, false, err
		}
	}
	if err := s.readMeta(ctx, node); err != nil {
		return nil, false, err
	}
	return s, true, nil
}

// pttlMS turns go-redis' PTTL answer into ms, keeping -1 and -2.
func pttlMS(d time.Duration) int64 {
	if d < 0 {
		return int64(d / time.Nanosecond)
	}
	return d.Milliseconds()
}

// classify decides what the key is (classify.go's rules).
func (s *state) classify(typ string, size int64, r *reads) {
	switch {
	case typ == "none":
	case typ == "hash" && r.hash == nil:
		s.why = fmt.Sprintf("a hash of %d fields, not a lock", size)
	case typ == "hash":
		l, ok := parseLock(r.hash.Val())
		if !ok {
			s.classifyRW(r.hash.Val())
			return
		}
		s.kind, s.lock, s.holders = kindLock, l, l.holders
		for i := range s.holders {
			s.holders[i].ExpiresMS = s.expiry()
		}
	case typ == "string":
		n, ok := int64(0), false
		if r.count != nil {
			n, ok = parseCount(r.count.Val())
		}
		switch {
		case !ok:
			s.why = "a string that is not a semaphore's count"
		case len(r.permits.Val()) == 0:
			s.why = fmt.Sprintf("an integer string %d without permits taken: an idle semaphore, or any counter", n)
		default:
			s.kind, s.free = kindSemaphore, n
			s.readPermits(r.permits.Val())
		}
	default:
		s.why = "a " + typ
	}
}

// expiry is when the lock key expires, in server ms; -1 never.
func (s *state) expiry() int64 {
	if s.ttlMS < 0 {
		return -1
	}
	return s.nowMS + s.ttlMS
}

// readPermits reads the permits taken (member → expiry).
func (s *state) readPermits(zs []redis.Z) {
	for _, z := range zs {
		member, _ := z.Member.(string)
		shown, client, _ := permitHolder(member)
		h := holder{Field: shown, Client: client, Count: 1, ExpiresMS: int64(z.Score), member: member}
		if z.Score >= noLease {
			h.ExpiresMS = -1
		}
		if h.ExpiresMS >= 0 && h.ExpiresMS <= s.nowMS {
			s.expired = append(s.expired, h)
			continue
		}
		s.holders = append(s.holders, h)
	}
}

// readMeta gives each holder the metadata stored with its hold: a mutex's
// rlock:meta (read with the hash); a semaphore permit's or a read-write
// lock holder's entry of the metadata hash, read after the state (HMGET of
// the holders' fields: an entry of a holder gone meanwhile is not asked
// for, and one that came meanwhile has none). A hash the ACL user may not
// read (NOPERM) leaves the metadata out.
func (s *state) readMeta(ctx context.Context, node redis.UniversalClient) error {
	if s.kind == kindLock {
		for i := range s.holders {
			s.holders[i].Meta = s.lock.meta
		}
		return nil
	}
	hs := []*holder{}
	for _, list := range [][]holder{s.holders, s.expired} {
		for i := range list {
			hs = append(hs, &list[i])
		}
	}
	if len(hs) == 0 || s.kind != kindSemaphore && s.kind != kindRWLock {
		return nil
	}
	fields := make([]string, len(hs))
	for i, h := range hs {
		fields[i] = h.metaField()
	}
	vals, err := node.HMGet(ctx, s.ns.semaphore(s.name).Meta, fields...).Result()
	switch {
	case isReply(err):
		return nil
	case err != nil:
		return err
	}
	for i, v := range vals {
		hs[i].Meta, _ = v.(string)
	}
	return nil
}

// metaField is h's field in the metadata hash: a permit's member, a
// read-write lock holder's field.
func (h holder) metaField() string {
	if h.member != "" {
		return h.member
	}
	return h.Field
}

// readQueue reads rlock's queue (in arrival order) and its waiter table.
func (s *state) readQueue(zs []redis.Z, table map[string]string) {
	if v, ok := table[layout.FieldOpen]; ok {
		s.open, _ = strconv.ParseInt(v, 10, 64)
	}
	for _, z := range zs {
		f, _ := z.Member.(string)
		w := waiter{Field: f}
		if s.kind == kindRWLock {
			w.Side = sideOf(f)
		}
		w.Client, _, _ = splitField(strings.TrimSuffix(f, writeSuffix))
		if p := strings.Split(table[f], "|"); len(p) >= 3 {
			w.DeadlineMS, _ = strconv.ParseInt(p[0], 10, 64)
			w.TTLMS, _ = strconv.ParseInt(p[1], 10, 64)
			w.Fenced = p[2] == "1"
			if len(p) >= 4 {
				w.ClaimMS, _ = strconv.ParseInt(p[3], 10, 64)
			}
		}
		s.waiters = append(s.waiters, w)
	}
}

// sortHolders orders holders by field, for stable output.
func sortHolders(hs []holder) {
	slices.SortFunc(hs, func(a, b holder) int { return strings.Compare(a.Field, b.Field) })
}
