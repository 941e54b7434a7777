package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// lsEntry is one line of ls: a lock or a semaphore.
type lsEntry struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Mode    string   `json:"mode,omitempty"`   // a read-write lock's: "read" or "write"
	Holders []string `json:"holders"`          // a lock's holder fields; a semaphore's rlock permits
	TTLMS   *int64   `json:"ttl_ms,omitempty"` // a lock's: -1 no expiry
	Taken   *int64   `json:"taken,omitempty"`  // a semaphore's permits taken
	Free    *int64   `json:"free,omitempty"`   // a semaphore's free permits
	Waiters int64    `json:"waiters"`          // rlock's queue length
	// TraceIDs are the trace IDs of the holders' metadata (otelhooks'
	// traceparent), one per holder in the order of Holders: "" for none.
	TraceIDs []string `json:"trace_ids"`
	// metaFields are a semaphore's or read-write lock's holders' fields in
	// its metadata hash, in the order of Holders.
	metaFields []string
}

// errLimit stops the scan at -limit entries.
var errLimit = errors.New("limit reached")

// lister lists the names of one ls run.
type lister struct {
	ns      namespace
	pattern string
	count   int64
	limit   int
	found   int
	refused int // keys the ACL user may not read (NOPERM): not listed
	p       *printer
	tw      *tabwriter.Writer
}

// runLs is "rlock ls [PATTERN]".
func runLs(ctx context.Context, c *cli, args []string) error {
	l := &lister{pattern: "*"}
	fs := newFlagSet("ls")
	fs.IntVar(&l.limit, "limit", 1000, "stop after this many entries")
	fs.Int64Var(&l.count, "count", 1000, "SCAN's COUNT hint")
	rest, err := c.parseCommand(fs, args, 0, "[-limit N] [-count N] [PATTERN]")
	if err != nil {
		return err
	}
	if l.limit < 1 || l.count < 1 {
		return usageError{"ls: -limit and -count must be at least 1"}
	}
	if len(rest) == 1 {
		l.pattern = rest[0]
	}
	l.ns, l.p = c.ns, c.printer() // parsed: -namespace and -json may follow "ls"
	rdb, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	nodes, err := masters(ctx, rdb)
	if err != nil {
		return err
	}
	if !l.p.json {
		l.tw = l.p.table()
		fmt.Fprintln(l.tw, "KIND\tNAME\tHELD BY\tTTL\tWAITERS\tTRACE")
	}
	for _, n := range nodes {
		if err = l.scan(ctx, n, c.conn.timeout); err != nil {
			break
		}
	}
	if l.tw != nil && (err == nil || errors.Is(err, errLimit)) {
		l.p.keep(l.tw.Flush()) // the table is held until complete: nothing of it on a failure
	}
	if l.refused > 0 {
		fmt.Fprintf(c.stderr, "rlock: ls left out %d key(s) the ACL user may not read (NOPERM); a namespaced service's locks: -namespace\n", l.refused)
	}
	if errors.Is(err, errLimit) {
		fmt.Fprintf(c.stderr, "rlock: ls stopped early, at -limit %d entries; more names may match\n", l.limit)
		err = nil
	}
	if err == nil {
		err = l.p.err
	}
	return err
}

// scan walks one node's keyspace with SCAN MATCH COUNT.
func (l *lister) scan(ctx context.Context, node redis.UniversalClient, timeout time.Duration) error {
	seen := make(map[string]bool) // SCAN may return a key twice
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		keys, next, err := node.Scan(cctx, cursor, l.ns.match(l.pattern), l.count).Result()
		if err == nil {
			err = l.batch(cctx, node, keys, seen)
		}
		cancel()
		if err != nil || next == 0 {
			return err
		}
		cursor = next
	}
}

// batch classifies one SCAN batch and prints its locks and semaphores.
func (l *lister) batch(ctx context.Context, node redis.UniversalClient, keys []string, seen map[string]bool) error {
	var fresh []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			if name, ok := l.ns.nameOf(k); ok && (l.ns == "" || globMatch(l.pattern, name)) {
				fresh = append(fresh, name)
			}
		}
	}
	entries, refused, err := summarize(ctx, node, l.ns, fresh)
	l.refused += refused
	if err != nil {
		return err
	}
	for _, e := range entries {
		l.print(e)
		if l.found++; l.found >= l.limit {
			return errLimit
		}
	}
	return nil
}

// print writes one entry.
func (l *lister) print(e lsEntry) {
	if l.p.json {
		l.p.object(e)
		return
	}
	held, ttl := strings.Join(e.Holders, ","), "-"
	if e.Kind == kindSemaphore {
		held = fmt.Sprintf("%d taken, %d free", *e.Taken, *e.Free)
	} else {
		ttl = msDur(*e.TTLMS)
	}
	if e.Mode != "" {
		held = e.Mode + ": " + held
	}
	fmt.Fprintf(l.tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.Kind, e.Name, held, ttl, e.Waiters, traces(e.TraceIDs))
}

// summarize reads the lock keys of names (in ns) in two pipelines: their
// type and size, then, for the ones that may be locks or semaphores, what
// ls prints; refused counts the keys the server would not let the user
// read (NOPERM).
func summarize(ctx context.Context, node redis.UniversalClient, ns namespace, names []string) (out []lsEntry, refused int, err error) {
	if len(names) == 0 {
		return nil, 0, nil
	}
	p := node.Pipeline()
	probes := make([][3]redis.Cmder, len(names))
	for i, n := range names {
		k := ns.key(n)
		probes[i] = [3]redis.Cmder{p.Type(ctx, k), p.HLen(ctx, k), p.StrLen(ctx, k)}
	}
	if _, err := p.Exec(ctx); err != nil && !isReply(err) {
		return nil, 0, err
	}
	p = node.Pipeline()
	var cands []candidate
	for i, n := range names {
		if redis.HasErrorPrefix(probes[i][0].Err(), "NOPERM") {
			refused++
			continue
		}
		if c, ok := newCandidate(ctx, p, ns, n, probes[i]); ok {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil, refused, nil
	}
	if _, err := p.Exec(ctx); err != nil && !isReply(err) {
		return nil, 0, err
	}
	for _, c := range cands {
		if e, ok := c.entry(); ok {
			out = append(out, e)
		}
	}
	if err := readTraces(ctx, node, ns, out); err != nil {
		return nil, 0, err
	}
	return out, refused, nil
}

// candidate is a key that may be a lock (a small hash) or a semaphore (a
// short string), with the reads queued to decide.
type candidate struct {
	name    string
	hash    *redis.MapStringStringCmd
	count   *redis.StringCmd
	pttl    *redis.DurationCmd
	permits *redis.ZSliceCmd
	queue   *redis.IntCmd
}

// newCandidate queues the reads for name's lock key when its probe says it
// may be one.
func newCandidate(ctx context.Context, p redis.Pipeliner, ns namespace, name string, probe [3]redis.Cmder) (candidate, bool) {
	typ := probe[0].(*redis.StatusCmd).Val()
	hlen, slen := probe[1].(*redis.IntCmd).Val(), probe[2].(*redis.IntCmd).Val()
	c, key := candidate{name: name}, ns.key(name)
	switch {
	case typ == "hash" && hlen <= maxLockFields:
		c.hash, c.pttl = p.HGetAll(ctx, key), p.PTTL(ctx, key)
	case typ == "string" && slen <= maxCountLen:
		c.count = p.Get(ctx, key)
		c.permits = p.ZRangeWithScores(ctx, ns.semaphore(name).Permits, 0, -1)
	default:
		return c, false
	}
	c.queue = p.ZCard(ctx, ns.mutex(name).Queue)
	return c, true
}

// entry decides what the candidate is (classify.go's rules).
func (c candidate) entry() (lsEntry, bool) {
	e := lsEntry{Name: c.name, Waiters: c.queue.Val(), Holders: []string{}, TraceIDs: []string{}}
	if c.hash != nil {
		holders, lockMeta, ok := c.lockHolders(&e)
		if !ok {
			return e, false
		}
		ttl := pttlMS(c.pttl.Val())
		e.TTLMS = &ttl
		for _, h := range holders {
			e.Holders, e.TraceIDs = append(e.Holders, h.Field), append(e.TraceIDs, traceID(lockMeta))
			e.metaFields = append(e.metaFields, h.Field)
		}
		return e, true
	}
	free, ok := parseCount(c.count.Val())
	if !ok || len(c.permits.Val()) == 0 {
		return e, false
	}
	taken := int64(len(c.permits.Val()))
	e.Kind, e.Free, e.Taken = kindSemaphore, &free, &taken
	for _, z := range c.permits.Val() {
		m, _ := z.Member.(string)
		shown, _, _ := permitHolder(m)
		e.Holders, e.TraceIDs = append(e.Holders, shown), append(e.TraceIDs, "")
		e.metaFields = append(e.metaFields, m)
	}
	return e, true
}

// readTraces fills the trace IDs of the semaphores and read-write locks of
// entries from their metadata hashes, in one pipeline (HMGET of the
// holders' fields); a hash the ACL user may not read (NOPERM) leaves them
// out.
func readTraces(ctx context.Context, node redis.UniversalClient, ns namespace, entries []lsEntry) error {
	p := node.Pipeline()
	cmds := make([]*redis.SliceCmd, len(entries))
	for i, e := range entries {
		if e.Kind != kindLock && len(e.metaFields) > 0 {
			cmds[i] = p.HMGet(ctx, ns.semaphore(e.Name).Meta, e.metaFields...) // named alike for a read-write lock
		}
	}
	if p.Len() == 0 {
		return nil
	}
	if _, err := p.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	for i, c := range cmds {
		if c == nil || c.Err() != nil {
			continue
		}
		for j, v := range c.Val() {
			m, _ := v.(string)
			entries[i].TraceIDs[j] = traceID(m)
		}
	}
	return nil
}

// traces is the TRACE column: the holders' trace IDs, "-" for none.
func traces(ids []string) string {
	if !slices.ContainsFunc(ids, func(id string) bool { return id != "" }) {
		return "-"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = orDash(id)
	}
	return strings.Join(out, ",")
}

// lockHolders reads the candidate's hash as a lock (with its rlock:meta)
// or a read-write lock, setting e's kind (and mode).
func (c candidate) lockHolders(e *lsEntry) ([]holder, string, bool) {
	if l, ok := parseLock(c.hash.Val()); ok {
		e.Kind = kindLock
		return l.holders, l.meta, true
	}
	l, ok := parseRWLock(c.hash.Val())
	e.Kind, e.Mode = kindRWLock, l.mode
	return l.holders, "", ok
}
