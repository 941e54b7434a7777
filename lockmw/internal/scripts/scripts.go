// Package scripts holds lockmw's Lua scripts: their sources (embedded),
// their hashes, the command lines of the hot path, and the names of their
// replies. The protocol they implement is docs/waiting.md; lib.lua, the
// queue, the hand-off and Redisson's reservation, is prepended to every
// script that uses it.
package scripts

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lib.lua
	libLua string
	//go:embed acquire.lua
	acquireLua string
	//go:embed reenter.lua
	reenterLua string
	//go:embed release.lua
	releaseLua string
	//go:embed fastrelease.lua
	fastReleaseLua string
	//go:embed leave.lua
	leaveLua string
	//go:embed forceunlock.lua
	forceUnlockLua string
	//go:embed renew.lua
	renewLua string
	//go:embed setmeta.lua
	setMetaLua string
	//go:embed unreenter.lua
	unreenterLua string
	//go:embed claim.lua
	claimLua string
	//go:embed touch.lua
	touchLua string
	//go:embed fence.lua
	fenceLua string
	//go:embed semacquire.lua
	semAcquireLua string
	//go:embed semrelease.lua
	semReleaseLua string
	//go:embed semleave.lua
	semLeaveLua string
	//go:embed semrenew.lua
	semRenewLua string
	//go:embed semavailable.lua
	semAvailableLua string
	//go:embed semunlockat.lua
	semUnlockAtLua string
)

// Replies of the scripts, decoded where they are read.
const (
	// release.lua (and the quorum's release, per master): a level of the
	// hold is gone, the hold is released, or left to expire (UnlockAt);
	// negative: the field is not in the lock (gone, or someone else's).
	ReleaseLevelsLeft int64 = 0
	ReleaseReleased   int64 = 1
	ReleaseToExpire   int64 = 2

	// reenter.lua: the new count, or the hold is gone, or this very
	// request was undone by an earlier, abandoned try of it.
	ReenterGone   int64 = -1
	ReenterUndone int64 = -2

	// semrelease.lua: the permit is given back (semunlockat.lua answers
	// ReleaseToExpire); negative: the field holds no permit (it expired).
	SemReleased int64 = 1
)

// The scripts run with EVALSHA; go-redis falls back to EVAL (which loads the
// script) when the server answers NOSCRIPT, as after a restart.
var (
	Acquire     = redis.NewScript(libLua + acquireLua)
	Reenter     = redis.NewScript(reenterLua)
	Release     = redis.NewScript(libLua + releaseLua)
	FastRelease = redis.NewScript(fastReleaseLua)
	Leave       = redis.NewScript(libLua + leaveLua)
	ForceUnlock = redis.NewScript(libLua + forceUnlockLua)
	Renew       = redis.NewScript(renewLua)
	SetMeta     = redis.NewScript(setMetaLua)
	Unreenter   = redis.NewScript(unreenterLua)
	Claim       = redis.NewScript(claimLua)
	Touch       = redis.NewScript(touchLua)
	Fence       = redis.NewScript(fenceLua)

	SemAcquire   = redis.NewScript(libLua + semAcquireLua)
	SemRelease   = redis.NewScript(libLua + semReleaseLua)
	SemLeave     = redis.NewScript(libLua + semLeaveLua)
	SemRenew     = redis.NewScript(libLua + semRenewLua)
	SemAvailable = redis.NewScript(libLua + semAvailableLua)
	SemUnlockAt  = redis.NewScript(libLua + semUnlockAtLua)
)

// The hashes of the scripts on the hot path, boxed once.
var (
	AcquireSHA any = Acquire.Hash()
	ReleaseSHA any = Release.Hash()
	AcquireSrc any = libLua + acquireLua
	ReleaseSrc any = libLua + releaseLua

	FastReleaseSHA any = FastRelease.Hash()
	FastReleaseSrc any = fastReleaseLua

	SemAcquireSHA any = SemAcquire.Hash()
	SemAcquireSrc any = libLua + semAcquireLua
	SemReleaseSHA any = SemRelease.Hash()
	SemReleaseSrc any = libLua + semReleaseLua
)

// Run runs a script on the hot path from a command line built by the
// caller: args is "evalsha", the script's hash, the number of keys, the keys
// and the arguments, each already an interface value (so that nothing is
// boxed again per call, as go-redis's Script.Run would). When the server
// answers NOSCRIPT it runs the source with EVAL. args is the command's own
// afterwards: the caller must not change it.
func Run(ctx context.Context, rdb Processor, src any, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	if err := rdb.Process(ctx, cmd); InFlight(err) {
		return gaveUp(ctx, err)
	}
	if IsNoScript(cmd.Err()) {
		eval := make([]any, len(args))
		copy(eval, args)
		eval[0], eval[1] = "eval", src
		cmd = redis.NewCmd(ctx, eval...)
		cmd.SetFirstKeyPos(3)
		if err := rdb.Process(ctx, cmd); InFlight(err) {
			return gaveUp(ctx, err)
		}
	}
	return cmd
}

// Processor runs one command: a go-redis client, or lockmw's batcher.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// InFlight reports whether a Processor returned err because the caller's
// context ended while the command was on its way (lockmw's batcher): the
// command is then not the caller's to read.
func InFlight(err error) bool {
	f, ok := err.(interface{ InFlight() bool }) // as returned: no allocation on the hot path
	return ok && f.InFlight()
}

// gaveUp is a command that failed with err, the error of a call given up
// in flight, for the caller to read instead of the one still on its way.
func gaveUp(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errors.Unwrap(err))
	return cmd
}

// RunPipelined runs each batch of script through one pipeline, and
// once more with EVAL for the batches that found the script missing.
func RunPipelined(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, batches []Call) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(batches))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range batches {
			cmds[i] = s.EvalSha(ctx, p, b.Keys, b.Args...)
		}
		return nil
	})
	var retry []int
	for i, c := range cmds {
		if IsNoScript(c.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range retry {
				cmds[i] = s.Eval(ctx, p, batches[i].Keys, batches[i].Args...)
			}
			return nil
		})
	}
	return cmds
}

// Call is one run of a script in a pipeline: its keys and arguments.
type Call struct {
	Keys []string
	Args []any
}

// The quorum's own scripts (see quorumend.go); fence.lua is the quorum's
// too, with the other scripts in scripts.go.
var (
	//go:embed quorumacquire.lua
	quorumAcquireLua string
	//go:embed quorumend.lua
	quorumEndLua string
)

var (
	// QuorumAcquire is acquire.lua as the function rlock_acquire,
	// called by quorumacquire.lua.
	QuorumAcquire = redis.NewScript(libLua + "local function rlock_acquire()\n" + acquireLua + "\nend\n" + quorumAcquireLua)
	QuorumEnd     = redis.NewScript(libLua + quorumEndLua)
)

// IsNoScript reports whether err is Redis's NOSCRIPT: the script is not
// loaded (a restart, SCRIPT FLUSH), and EVAL must send its source.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
