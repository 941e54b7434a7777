package lockmw

import (
	"context"
	"fmt"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
)

// The short releases (fastrelease.lua) queued in one pipeline go out as one
// run of the script over all their locks. Redis charges a script for its
// run and for each call inside (about 1.7 µs a call beside the command's own
// cost, docs/performance.md): one run, with one EXISTS of the queues, one
// PUBSUB NUMSUB and one DEL for all its locks, leaves per lock its HGET and
// its latch SET, and the pipeline carries one command instead of many. The run
// takes the place of the first of them in the pipeline: no release runs
// after a command queued behind it (one to take the same name).
//
// Nothing else changes for a caller: it queued its own EVALSHA, and gets
// its own reply in it, an integer or an error of its own (the script runs
// each release under pcall: one that fails leaves the others done). When
// the merged run fails as a whole (NOSCRIPT after a restart, the network),
// every caller gets that error and does what it would have done with it
// (scripts.Run sends its own EVAL on NOSCRIPT, which loads the script for
// the next merge). A re-sent merged run, like a re-sent release, finds the
// locks it freed gone: each caller's latch answers it (release.lua).

// mergeMax bounds the releases of one run: the server runs nothing else
// while a script runs (a release is a few µs).
const mergeMax = 64

// releaseMerge builds one pipeline's commands, its short releases merged.
// It is a sender's, kept for its next pipeline.
type releaseMerge struct {
	cmds  []redis.Cmder // in queue order; nil: where the merged runs go (the first release's place)
	parts []*redis.Cmd  // the short releases
	runs  []*redis.Cmd  // the merged runs sent, mergeMax releases each
}

// queue adds cmd to the pipeline: a short release ("evalsha",
// fastrelease.lua's hash, 5, five keys and three arguments) to the merged
// runs, which take the place of the first.
func (m *releaseMerge) queue(cmd redis.Cmder) {
	if c, ok := cmd.(*redis.Cmd); ok {
		args := c.Args()
		if len(args) == 11 && args[0] == "evalsha" && args[1] == scripts.FastReleaseSHA {
			if len(m.parts) == 0 {
				m.cmds = append(m.cmds, nil)
			}
			m.parts = append(m.parts, c)
			return
		}
	}
	m.cmds = append(m.cmds, cmd)
}

// send queues the pipeline's commands in p, in order: a lone release as it
// is, more as merged runs.
func (m *releaseMerge) send(ctx context.Context, p redis.Pipeliner) {
	for _, c := range m.cmds {
		if c != nil {
			_ = p.Process(ctx, c)
			continue
		}
		if len(m.parts) == 1 {
			_ = p.Process(ctx, m.parts[0])
			continue
		}
		for i := 0; i < len(m.parts); i += mergeMax {
			part := m.parts[i:min(i+mergeMax, len(m.parts))]
			n := len(part)
			args := make([]any, 3, 3+8*n)
			args[0], args[1], args[2] = "evalsha", scripts.FastReleaseSHA, 5*n
			for _, c := range part {
				args = append(args, c.Args()[3:8]...)
			}
			for _, c := range part {
				args = append(args, c.Args()[8:11]...)
			}
			run := redis.NewCmd(ctx, args...)
			run.SetFirstKeyPos(3)
			_ = p.Process(ctx, run)
			m.runs = append(m.runs, run)
		}
	}
}

// answer gives each kept release its reply, from the merged runs', once
// the pipeline has returned.
func (m *releaseMerge) answer() {
	if len(m.parts) < 2 {
		return
	}
	for i, run := range m.runs {
		part := m.parts[i*mergeMax : min((i+1)*mergeMax, len(m.parts))]
		replies, err := run.Slice()
		for j, c := range part {
			switch {
			case err != nil:
				c.SetErr(err)
			case j >= len(replies):
				c.SetErr(fmt.Errorf("lockmw: merged release answered %d of %d", len(replies), len(part)))
			default:
				setReply(c, replies[j])
			}
		}
	}
}

// reset empties m for the next pipeline, keeping its slices.
func (m *releaseMerge) reset() {
	clear(m.cmds)
	clear(m.parts)
	clear(m.runs)
	m.cmds, m.parts, m.runs = m.cmds[:0], m.parts[:0], m.runs[:0]
}

// setReply sets c's reply from one element of a merged run's.
func setReply(c *redis.Cmd, v any) {
	switch v := v.(type) {
	case int64:
		c.SetVal(v)
	case error:
		c.SetErr(v)
	default:
		c.SetErr(fmt.Errorf("lockmw: merged release answered %T", v))
	}
}
