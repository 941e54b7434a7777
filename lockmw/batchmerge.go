package lockmw

import (
	"fmt"
	"sync/atomic"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// The short releases (fastrelease.lua) queued in one pipeline go out as one
// run of the script over all their locks. Redis charges a script for its
// run and for each call inside (about 1.7 µs a call beside the command's own
// cost, docs/performance-history.md): one run, with one EXISTS of the queues, one
// PUBSUB NUMSUB, one DEL and one latch SET for all its locks, leaves per lock
// its HGET, and the pipeline carries one command instead of many. The run
// takes the place of the first of them in the pipeline: no release runs
// after a command queued behind it (one to take the same name).
//
// Nothing else changes for a caller: it queued its own EVALSHA, and gets
// its own reply in it, an integer or an error of its own (the HGET that
// finds a key of the wrong type is a redis.pcall: its error is that lock's
// reply, and the others are done). The run's keys are grouped by kind (every lock, then every
// channel, queue and roll-call channel) so that the script's commands over
// all its locks take ranges of KEYS as they are. When
// the merged run fails as a whole (NOSCRIPT after a restart, the network),
// every caller gets that error and does what it would have done with it
// (scripts.Run sends its own EVAL on NOSCRIPT, which loads the script for
// the next merge).
//
// The run has one latch, not one per lock: the run's latch key (its first
// lock's latch with ":run") holds a character per lock, "1" for each it
// freed. A re-sent run (go-redis re-sends a pipeline whose reply it lost)
// reads it first; a caller whose reply was lost, and who calls Unlock again,
// finds its lock gone and release.lua looks at its place in the run's latch,
// which the batcher noted in its level (runNote) before sending the run. A
// level's release is merged once: a later try (its first reply was lost)
// goes alone, with the level's own latch, so that one note says where each
// of its tries left its answer.

// mergeMax bounds the releases of one run: the server runs nothing else
// while a script runs (a release is a few µs).
const mergeMax = 64

// fastReleaseArgs is the length of a short release's command line
// (mutexfastpath.go's fastRelease): "evalsha", the hash, the key count, the
// latch, four keys of its lock, the publish command, the latch TTL and the
// field.
const fastReleaseArgs = 11

// runNote is where a merged run carried a level's short release: the run's
// latch key and the level's place in it (from 1). The batcher claims it
// once and sets it before the run is sent; release.lua reads it
// (singleStore.release).
type runNote struct {
	claimed atomic.Bool
	at      atomic.Int32
	latch   atomic.Pointer[string]
}

// of returns the run's latch key and the level's place in it, or "" when
// no merged run carried the level's release.
func (n *runNote) of() (string, int32) {
	if l := n.latch.Load(); l != nil {
		return *l, n.at.Load()
	}
	return "", 0
}

// levelLatch is a level as the latch argument of its short release: the
// level's latch key to Redis (and to hooks), and to the batcher the level
// whose runNote a merge sets.
type levelLatch level

// MarshalBinary returns the latch key's bytes, as strArg does.
func (l *levelLatch) MarshalBinary() ([]byte, error) { return (*strArg)(&l.latch).MarshalBinary() }

func (l *levelLatch) String() string { return l.latch }

// releaseMerge builds one pipeline's commands, its short releases merged.
// It is a sender's, kept for its next pipeline. On a cluster (slotted) only
// the releases of one hash slot merge, each slot's run in the place of its
// first release.
type releaseMerge struct {
	slotted bool
	cmds    []*backend.Cmd // in queue order; nil: where a group's merged runs go (its first release's place)
	out     []*backend.Cmd // the pipeline's commands, as send built them
	groups  []mergeGroup   // the short releases, by slot in order of their first (one group when not slotted)
	runs    []mergedRun    // the merged runs sent, mergeMax releases each
}

// mergeGroup is the short releases of one pipeline in one hash slot.
type mergeGroup struct {
	slot  int
	parts []*backend.Cmd
}

// mergedRun is one merged run and the releases it carries.
type mergedRun struct {
	run   *backend.Cmd
	parts []*backend.Cmd
}

// queue adds cmd to the pipeline: a short release whose level was never
// merged to its slot's merged runs, which take the place of the slot's
// first. (All are one Client's: the publish command and the latch TTL are
// the same.)
func (m *releaseMerge) queue(c *backend.Cmd) {
	if !mergeable(c.Args()) {
		m.cmds = append(m.cmds, c)
		return
	}
	slot := 0
	if m.slotted {
		key, _ := argString(c.Args()[4])
		slot = keySlot(key)
	}
	for i := range m.groups {
		if m.groups[i].slot == slot {
			m.groups[i].parts = append(m.groups[i].parts, c)
			return
		}
	}
	m.cmds = append(m.cmds, nil)
	if n := len(m.groups); n < cap(m.groups) { // the group's slice of an earlier pipeline
		m.groups = m.groups[:n+1]
		m.groups[n].slot, m.groups[n].parts = slot, append(m.groups[n].parts[:0], c)
		return
	}
	m.groups = append(m.groups, mergeGroup{slot: slot, parts: []*backend.Cmd{c}})
}

// mergeable reports whether args are a short release's that may join the
// merged runs, and claims its level's note.
func mergeable(args []any) bool {
	if len(args) != fastReleaseArgs || args[0] != "evalsha" || args[1] != scripts.FastReleaseSHA {
		return false
	}
	l, ok := args[3].(*levelLatch)
	return ok && l.ran.claimed.CompareAndSwap(false, true)
}

// send returns the pipeline's commands, in order: each group's short
// releases as merged runs of mergeMax at most, a release left alone (the
// only one of its slot, or one after full runs) as it is, with its own
// latch and reply.
func (m *releaseMerge) send() []*backend.Cmd {
	g := 0
	for _, c := range m.cmds {
		if c != nil {
			m.out = append(m.out, c)
			continue
		}
		parts := m.groups[g].parts
		g++
		for i := 0; i < len(parts); i += mergeMax {
			part := parts[i:min(i+mergeMax, len(parts))]
			if len(part) == 1 {
				m.out = append(m.out, part[0])
				continue
			}
			run := runOf(part)
			m.out = append(m.out, run)
			m.runs = append(m.runs, mergedRun{run: run, parts: part})
		}
	}
	return m.out
}

// runOf is the merged run of part (two or more short releases), whose
// levels it notes.
func runOf(part []*backend.Cmd) *backend.Cmd {
	n := len(part)
	first := part[0].Args()
	latch := new(string)
	*latch = first[3].(*levelLatch).latch + ":run"
	args := make([]any, 4, 4+5*n+2)
	args[0], args[1], args[2], args[3] = "evalsha", scripts.FastReleaseSHA, 1+4*n, argOf(latch)
	for k := 4; k < 8; k++ { // the locks, then their channels, queues, roll-call channels
		for _, c := range part {
			args = append(args, c.Args()[k])
		}
	}
	args = append(args, first[8], first[9])
	for j, c := range part {
		a := c.Args()
		args = append(args, a[10])
		note := &a[3].(*levelLatch).ran
		note.at.Store(int32(j + 1))
		note.latch.Store(latch)
	}
	return backend.NewCmd(args...)
}

// answer gives each release of a merged run its reply, from the run's,
// once the pipeline has returned (a part sent alone has its own reply).
func (m *releaseMerge) answer() {
	for _, r := range m.runs {
		replies, err := r.run.Slice()
		for j, c := range r.parts {
			switch {
			case err != nil:
				c.SetErr(err)
			case j >= len(replies):
				c.SetErr(fmt.Errorf("lockmw: merged release answered %d of %d", len(replies), len(r.parts)))
			default:
				setReply(c, replies[j])
			}
		}
	}
}

// reset empties m for the next pipeline, keeping its slices.
func (m *releaseMerge) reset() {
	clear(m.cmds)
	clear(m.out)
	clear(m.runs)
	for i := range m.groups {
		clear(m.groups[i].parts)
	}
	m.cmds, m.out, m.groups, m.runs = m.cmds[:0], m.out[:0], m.groups[:0], m.runs[:0]
}

// setReply sets c's reply from one element of a merged run's.
func setReply(c *backend.Cmd, v any) {
	switch v := v.(type) {
	case int64:
		c.SetVal(v)
	case error:
		c.SetErr(v)
	default:
		c.SetErr(fmt.Errorf("lockmw: merged release answered %T", v))
	}
}
