package reliability_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/redis/go-redis/v9"
)

// stateEvery is how often the sampler reads the names' state: often enough
// to see a claim window (200 ms) or a hold a killed process never logged,
// not so often that it loads the server the run measures.
const stateEvery = 5 * time.Millisecond

// stallAfter is the longest time between two samples' replies that is not
// called a stall: past it, the driver or redis-server did not run (a loaded
// machine), and nobody could have been served in that time.
const stallAfter = 50 * time.Millisecond

// stall is a time the sampler heard nothing from Redis.
type stall struct{ from, to time.Time }

// lockState is what Redis held for one name at one instant, as the driver's
// sampler read it (atomically, in one MULTI).
type lockState struct {
	at      time.Time       // the sampler's clock when the reply arrived
	holders []string        // the holders' fields: a mutex's one, a semaphore's permits
	ttls    []time.Duration // each holder's TTL left (-1: none)
	queue   []string        // the waiter queue's fields, in order
	masters []int           // on a quorum: on how many masters each holder was seen in this sample
}

// same reports whether s and o have the same holders and queue (their TTLs
// aside).
func (s lockState) same(o lockState) bool {
	return slices.Equal(s.holders, o.holders) && slices.Equal(s.queue, o.queue)
}

// sampler records every change of the holders and queues of a run's names:
// enough to tell, after the run, who held a name while its recovery was slow
// and who was queued for its next hand-off.
type sampler struct {
	rdb    *redis.Client
	others []*redis.Client // a quorum's other masters: only who holds there is read
	names  []string
	sem    bool // semaphores: the holders are the permits taken
	// qsem, for semaphores on a quorum, is their permits: each a quorum
	// mutex (layout.QuorumPermit), whose holders are read as a mutex's.
	qsem int

	mu      sync.Mutex
	changes map[string][]lockState // by name, in time order
	stalls  []stall
	last    time.Time // the last reply
	// waited is the machine's CPU pressure as the samples read it: when,
	// and how long some task had waited for a CPU since boot (cpuWaited),
	// one reading every pressureEvery at most.
	waited []pressureAt
	stop   chan struct{}
	done   chan struct{}
}

// startSampler samples names on rdb every stateEvery until stopped; on a
// quorum, the holders of the names on its other masters too (semaphores
// there: of permits permits).
func startSampler(rdb *redis.Client, others []*redis.Client, names []string, sem bool, permits int) *sampler {
	s := &sampler{rdb: rdb, others: others, names: names, sem: sem, changes: make(map[string][]lockState),
		stop: make(chan struct{}), done: make(chan struct{})}
	if sem && len(others) > 0 {
		s.qsem = permits
	}
	go s.run()
	return s
}

// close stops the sampler and waits for it.
func (s *sampler) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func (s *sampler) run() {
	defer close(s.done)
	t := time.NewTicker(stateEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// sample reads every name's state once and keeps the ones that changed.
func (s *sampler) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// A quorum's other masters are read at the same time, so that the
	// sampler's pace (and the stalls it reports) stays that of one read.
	var elsewhere map[string]map[string]int
	var others sync.WaitGroup
	others.Go(func() { elsewhere = s.sampleOthers(ctx) })
	var now *redis.TimeCmd
	holders := make([]redis.Cmder, len(s.names))
	pttls := make([]*redis.DurationCmd, len(s.names))
	queues := make([]*redis.StringSliceCmd, len(s.names))
	permits := make([][]*redis.StringSliceCmd, len(s.names)) // a quorum semaphore's, with pttls
	ppttls := make([][]*redis.DurationCmd, len(s.names))
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		for i, name := range s.names {
			if s.qsem > 0 {
				for j := range s.qsem {
					k := layout.QuorumPermit(name, j)
					permits[i] = append(permits[i], p.HKeys(ctx, k))
					ppttls[i] = append(ppttls[i], p.PTTL(ctx, k))
				}
				continue
			}
			if s.sem {
				k := layout.Semaphore(name)
				holders[i] = p.ZRangeWithScores(ctx, k.Permits, 0, -1)
				queues[i] = p.ZRange(ctx, k.Queue, 0, -1)
				continue
			}
			k := layout.Mutex(name)
			holders[i] = p.HKeys(ctx, k.Lock)
			pttls[i] = p.PTTL(ctx, k.Lock)
			queues[i] = p.ZRange(ctx, k.Queue, 0, -1)
		}
		return nil
	})
	at := time.Now()
	others.Wait()
	if err != nil {
		return // a sample missed; the next one will tell
	}
	serverMs := now.Val().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() && at.Sub(s.last) > stallAfter {
		s.stalls = append(s.stalls, stall{s.last, at})
	}
	s.last = at
	if w, ok := cpuWaited(); ok && (len(s.waited) == 0 || at.Sub(s.waited[len(s.waited)-1].at) >= pressureEvery) {
		s.waited = append(s.waited, pressureAt{at, w})
	}
	for i, name := range s.names {
		st := lockState{}
		if queues[i] != nil {
			st.queue = queues[i].Val()
		}
		st.at = at
		for j, c := range permits[i] { // a quorum semaphore's permits: each a mutex's hash
			for _, f := range c.Val() {
				if !strings.HasPrefix(f, layout.OwnPrefix) {
					st.holders = append(st.holders, f)
					st.ttls = append(st.ttls, ppttls[i][j].Val())
					st.masters = append(st.masters, 1+elsewhere[name][f])
				}
			}
		}
		switch c := holders[i].(type) {
		case *redis.ZSliceCmd: // a semaphore's permits: the score is the expiry, server ms
			for _, z := range c.Val() {
				st.holders = append(st.holders, z.Member.(string))
				st.ttls = append(st.ttls, time.Duration(int64(z.Score)-serverMs)*time.Millisecond)
			}
		case *redis.StringSliceCmd: // a mutex's hash: its holder and rlock's own fields
			for _, f := range c.Val() {
				if !strings.HasPrefix(f, layout.OwnPrefix) {
					st.holders = append(st.holders, f)
					st.ttls = append(st.ttls, pttls[i].Val())
					st.masters = append(st.masters, 1+elsewhere[name][f])
				}
			}
		}
		s.record(name, st)
	}
}

// record keeps st as name's next change when its holders or queue differ
// from the last one; otherwise it counts the masters st saw each holder on
// in the last change (the most at once). A quorum's hold is first seen with
// its acquisition still on its way to the other masters: a hold seen on one
// master, then on all three, is one change, and only the count kept here
// tells it from a partial win (holders; the soak of issue 30 charged two
// recoveries to the kill before such a hold's, its winner killed before it
// logged it).
func (s *sampler) record(name string, st lockState) {
	prev := s.changes[name]
	n := len(prev)
	if n == 0 || !prev[n-1].same(st) {
		s.changes[name] = append(prev, st)
		return
	}
	last := &prev[n-1]
	for i := range min(len(last.masters), len(st.masters)) {
		last.masters[i] = max(last.masters[i], st.masters[i])
	}
}

// sampleOthers returns, by name and field, on how many of a quorum's other
// masters the field holds the name (read while the first master is, not
// atomically with it).
func (s *sampler) sampleOthers(ctx context.Context) map[string]map[string]int {
	if len(s.others) == 0 || s.sem && s.qsem == 0 {
		return nil
	}
	// The hashes of a name: its mutex's, or a quorum semaphore's permits'.
	keys := func(name string) []string {
		if s.qsem == 0 {
			return []string{layout.Mutex(name).Lock}
		}
		var ks []string
		for j := range s.qsem {
			ks = append(ks, layout.QuorumPermit(name, j))
		}
		return ks
	}
	out := make(map[string]map[string]int)
	for _, rdb := range s.others {
		cmds := make([][]*redis.StringSliceCmd, len(s.names))
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, name := range s.names {
				for _, k := range keys(name) {
					cmds[i] = append(cmds[i], p.HKeys(ctx, k))
				}
			}
			return nil
		})
		for i, name := range s.names {
			for _, c := range cmds[i] {
				for _, f := range c.Val() {
					if out[name] == nil {
						out[name] = make(map[string]int)
					}
					out[name][f]++
				}
			}
		}
	}
	return out
}

// stallsIn returns the stalls that overlap [from, to].
func (s *sampler) stallsIn(from, to time.Time) []stall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stall
	for _, st := range s.stalls {
		if st.to.After(from) && st.from.Before(to) {
			out = append(out, st)
		}
	}
	return out
}

// seenHolder is a holder's field, when the sampler first saw it hold and
// the TTL it had then; on a quorum, whether it was never seen on a majority
// of the masters (a partial win of a split vote, undone or left to expire,
// not a hold).
type seenHolder struct {
	field   string
	at      time.Time
	ttl     time.Duration
	partial bool
}

// holders returns every field the sampler saw hold name, in the order it
// first saw them.
func (s *sampler) holders(name string) []seenHolder {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]int) // index in out
	most := make(map[string]int) // the most masters it was seen on at once
	var out []seenHolder
	for _, st := range s.changes[name] {
		for i, f := range st.holders {
			if _, ok := seen[f]; !ok {
				seen[f] = len(out)
				out = append(out, seenHolder{f, st.at, st.ttls[i], false})
			}
			if len(st.masters) > i {
				most[f] = max(most[f], st.masters[i])
			}
		}
	}
	if need := (1+len(s.others))/2 + 1; len(s.others) > 0 {
		for f, i := range seen {
			out[i].partial = most[f] < need
		}
	}
	return out
}

// stalledIn returns how much of [from, to] the stalls cover.
func (s *sampler) stalledIn(from, to time.Time) time.Duration {
	var d time.Duration
	for _, st := range s.stallsIn(from, to) {
		d += earlier(to, st.to).Sub(later(from, st.from))
	}
	return d
}

// pressureEvery is how often the sampler reads the machine's CPU pressure.
const pressureEvery = 20 * time.Millisecond

// pressureAt is a reading of cpuWaited and when it was taken.
type pressureAt struct {
	at     time.Time
	waited time.Duration
}

// starvedIn returns how long, within [from, to] widened to the readings
// around it, some task of the machine waited for a CPU (Linux's
// /proc/pressure/cpu "some"): no process was kept off a CPU longer than
// that in the window, so a chain of steps on a starved machine (a waiter's
// timer, its attempt, its logging the win) was slowed by no more. 0 where
// the kernel does not tell.
func (s *sampler) starvedIn(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waited) == 0 {
		return 0
	}
	i := sort.Search(len(s.waited), func(i int) bool { return s.waited[i].at.After(from) })
	j := sort.Search(len(s.waited), func(j int) bool { return !s.waited[j].at.Before(to) })
	i = max(i-1, 0)
	j = min(j, len(s.waited)-1)
	if j <= i {
		return 0
	}
	return s.waited[j].waited - s.waited[i].waited
}

// stalled returns the total time of every stall.
func (s *sampler) stalled() (time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d time.Duration
	for _, st := range s.stalls {
		d += st.to.Sub(st.from)
	}
	return d, len(s.stalls)
}

// between returns the states of name that began in (from, to], and the one
// in force at from.
func (s *sampler) between(name string, from, to time.Time) []lockState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []lockState
	for _, st := range s.changes[name] {
		switch {
		case !st.at.After(from):
			out = append(out[:0], st)
		case !st.at.After(to):
			out = append(out, st)
		}
	}
	return out
}
