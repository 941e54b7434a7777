package lockmw

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lib.lua
	libLua string
	//go:embed scripts/acquire.lua
	acquireLua string
	//go:embed scripts/reenter.lua
	reenterLua string
	//go:embed scripts/release.lua
	releaseLua string
	//go:embed scripts/fastrelease.lua
	fastReleaseLua string
	//go:embed scripts/leave.lua
	leaveLua string
	//go:embed scripts/forceunlock.lua
	forceUnlockLua string
	//go:embed scripts/renew.lua
	renewLua string
	//go:embed scripts/setmeta.lua
	setMetaLua string
	//go:embed scripts/unreenter.lua
	unreenterLua string
	//go:embed scripts/claim.lua
	claimLua string
	//go:embed scripts/touch.lua
	touchLua string
	//go:embed scripts/fence.lua
	fenceLua string
	//go:embed scripts/semacquire.lua
	semAcquireLua string
	//go:embed scripts/semrelease.lua
	semReleaseLua string
	//go:embed scripts/semleave.lua
	semLeaveLua string
	//go:embed scripts/semrenew.lua
	semRenewLua string
	//go:embed scripts/semavailable.lua
	semAvailableLua string
	//go:embed scripts/semunlockat.lua
	semUnlockAtLua string
)

// Replies of the scripts, decoded where they are read.
const (
	// release.lua (and the quorum's release, per master): a level of the
	// hold is gone, the hold is released, or left to expire (UnlockAt);
	// negative: the field is not in the lock (gone, or someone else's).
	releaseLevelsLeft int64 = 0
	releaseReleased   int64 = 1
	releaseToExpire   int64 = 2

	// reenter.lua: the new count, or the hold is gone, or this very
	// request was undone by an earlier, abandoned try of it.
	reenterGone   int64 = -1
	reenterUndone int64 = -2

	// semrelease.lua: the permit is given back (semunlockat.lua answers
	// releaseToExpire); negative: the field holds no permit (it expired).
	semReleased int64 = 1
)

// The scripts run with EVALSHA; go-redis falls back to EVAL (which loads the
// script) when the server answers NOSCRIPT, as after a restart.
var (
	acquireScript     = redis.NewScript(libLua + acquireLua)
	reenterScript     = redis.NewScript(reenterLua)
	releaseScript     = redis.NewScript(libLua + releaseLua)
	fastReleaseScript = redis.NewScript(fastReleaseLua)
	leaveScript       = redis.NewScript(libLua + leaveLua)
	forceUnlockScript = redis.NewScript(libLua + forceUnlockLua)
	renewScript       = redis.NewScript(renewLua)
	setMetaScript     = redis.NewScript(setMetaLua)
	unreenterScript   = redis.NewScript(unreenterLua)
	claimScript       = redis.NewScript(claimLua)
	touchScript       = redis.NewScript(touchLua)
	fenceScript       = redis.NewScript(fenceLua)

	semAcquireScript   = redis.NewScript(libLua + semAcquireLua)
	semReleaseScript   = redis.NewScript(libLua + semReleaseLua)
	semLeaveScript     = redis.NewScript(libLua + semLeaveLua)
	semRenewScript     = redis.NewScript(libLua + semRenewLua)
	semAvailableScript = redis.NewScript(libLua + semAvailableLua)
	semUnlockAtScript  = redis.NewScript(libLua + semUnlockAtLua)
)

// The hashes of the scripts on the hot path, boxed once.
var (
	acquireSHA any = acquireScript.Hash()
	releaseSHA any = releaseScript.Hash()
	acquireSrc any = libLua + acquireLua
	releaseSrc any = libLua + releaseLua

	fastReleaseSHA any = fastReleaseScript.Hash()
	fastReleaseSrc any = fastReleaseLua
)

// runScript runs a script on the hot path from a command line built by the
// caller: args is "evalsha", the script's hash, the number of keys, the keys
// and the arguments, each already an interface value (so that nothing is
// boxed again per call, as go-redis's Script.Run would). When the server
// answers NOSCRIPT it runs the source with EVAL. args is the command's own
// afterwards: the caller must not change it.
func runScript(ctx context.Context, rdb redis.UniversalClient, src any, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = rdb.Process(ctx, cmd)
	if isNoScript(cmd.Err()) {
		eval := make([]any, len(args))
		copy(eval, args)
		eval[0], eval[1] = "eval", src
		cmd = redis.NewCmd(ctx, eval...)
		cmd.SetFirstKeyPos(3)
		_ = rdb.Process(ctx, cmd)
	}
	return cmd
}

// runPipelinedScripts runs each batch of script through one pipeline, and
// once more with EVAL for the batches that found the script missing.
func runPipelinedScripts(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, batches []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(batches))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range batches {
			cmds[i] = s.EvalSha(ctx, p, b.keys, b.args...)
		}
		return nil
	})
	var retry []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range retry {
				cmds[i] = s.Eval(ctx, p, batches[i].keys, batches[i].args...)
			}
			return nil
		})
	}
	return cmds
}

// scriptCall is one run of a script in a pipeline: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}
