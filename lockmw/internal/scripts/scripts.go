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
	"sync"

	"github.com/go-rlock/rlock/lockmw/backend"
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

// The scripts run with EVALSHA, and with EVAL (which loads the script) when
// the server answers NOSCRIPT, as after a restart (Run, Eval).
var (
	Acquire     = backend.NewScript(libLua + acquireLua)
	Reenter     = backend.NewScript(reenterLua)
	Release     = backend.NewScript(libLua + releaseLua)
	FastRelease = backend.NewScript(fastReleaseLua)
	Leave       = backend.NewScript(libLua + leaveLua)
	ForceUnlock = backend.NewScript(libLua + forceUnlockLua)
	Renew       = backend.NewScript(renewLua)
	SetMeta     = backend.NewScript(libLua + setMetaLua)
	Unreenter   = backend.NewScript(unreenterLua)
	Claim       = backend.NewScript(claimLua)
	Touch       = backend.NewScript(touchLua)
	Fence       = backend.NewScript(fenceLua)

	SemAcquire   = backend.NewScript(libLua + semAcquireLua)
	SemRelease   = backend.NewScript(libLua + semReleaseLua)
	SemLeave     = backend.NewScript(libLua + semLeaveLua)
	SemRenew     = backend.NewScript(libLua + semRenewLua)
	SemAvailable = backend.NewScript(libLua + semAvailableLua)
	SemUnlockAt  = backend.NewScript(libLua + semUnlockAtLua)
)

// The hashes of the scripts on the hot path, boxed once.
var (
	AcquireSHA any = Acquire.SHA()
	ReleaseSHA any = Release.SHA()
	AcquireSrc any = libLua + acquireLua
	ReleaseSrc any = libLua + releaseLua

	FastReleaseSHA any = FastRelease.SHA()
	FastReleaseSrc any = fastReleaseLua

	SemAcquireSHA any = SemAcquire.SHA()
	SemAcquireSrc any = libLua + semAcquireLua
	SemReleaseSHA any = SemRelease.SHA()
	SemReleaseSrc any = libLua + semReleaseLua
)

// Run runs a script on the hot path from a command line built by the
// caller: args is "evalsha", the script's hash, the number of keys, the keys
// and the arguments, each already an interface value (so that nothing is
// boxed again per call). When the server answers NOSCRIPT it runs the
// source with EVAL. args is the command's own afterwards: the caller must
// not change it.
func Run(ctx context.Context, p Processor, src any, args []any) *backend.Cmd {
	cmd, _ := runPooled(ctx, p, src, args) // the caller keeps it: never put back
	return cmd
}

// RunInt64 is Run's integer reply, RunSlice its array: on the hot path,
// with commands taken from a pool and put back once read (a command given
// up in flight stays the pipeline's).
func RunInt64(ctx context.Context, p Processor, src any, args []any) (int64, error) {
	cmd, pooled := runPooled(ctx, p, src, args)
	n, err := cmd.Int64()
	if pooled {
		putCmd(cmd)
	}
	return n, err
}

// RunSlice: see RunInt64.
func RunSlice(ctx context.Context, p Processor, src any, args []any) ([]any, error) {
	cmd, pooled := runPooled(ctx, p, src, args)
	v, err := cmd.Slice()
	if pooled {
		putCmd(cmd)
	}
	return v, err
}

var cmdPool = sync.Pool{New: func() any { return new(backend.Cmd) }}

// GetCmd is a command of the pool, args its line.
func GetCmd(args []any) *backend.Cmd {
	cmd := cmdPool.Get().(*backend.Cmd)
	cmd.Reuse(args)
	return cmd
}

func putCmd(cmd *backend.Cmd) {
	cmd.Reuse(nil)
	cmdPool.Put(cmd)
}

// PutCmd gives cmd back to the pool once nothing reads it.
func PutCmd(cmd *backend.Cmd) { putCmd(cmd) }

// runPooled is Run with pooled commands; pooled is false when the result is
// not the pool's (a call given up in flight).
func runPooled(ctx context.Context, p Processor, src any, args []any) (*backend.Cmd, bool) {
	cmd := GetCmd(args)
	if err := p.Process(ctx, cmd); InFlight(err) {
		return gaveUp(err), false
	}
	if backend.IsNoScript(cmd.Err()) {
		putCmd(cmd)
		cmd = GetCmd(EvalLine(src, args))
		if err := p.Process(ctx, cmd); InFlight(err) {
			return gaveUp(err), false
		}
	}
	return cmd, true
}

// Eval runs s once on p with keys and args: EVALSHA, then EVAL on NOSCRIPT.
func Eval(ctx context.Context, p Processor, s backend.Script, keys []string, args ...any) *backend.Cmd {
	return Run(ctx, p, s.Source(), Line(s, keys, args))
}

// Line is the EVALSHA command line of s over keys and args.
func Line(s backend.Script, keys []string, args []any) []any {
	line := make([]any, 0, 3+len(keys)+len(args))
	line = append(line, "evalsha", s.SHA(), len(keys))
	for _, k := range keys {
		line = append(line, k)
	}
	return append(line, args...)
}

// EvalLine is a copy of line (an EVALSHA command line) with EVAL and the
// script's source src in place of its hash.
func EvalLine(src any, line []any) []any {
	eval := make([]any, len(line))
	copy(eval, line)
	eval[0], eval[1] = "eval", src
	return eval
}

// Processor runs one command: a back-end, or lockmw's batcher.
type Processor interface {
	Process(ctx context.Context, cmd *backend.Cmd) error
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
func gaveUp(err error) *backend.Cmd {
	cmd := backend.NewCmd()
	cmd.SetErr(errors.Unwrap(err))
	return cmd
}

// RunPipelined runs each batch of script through one pipeline, and
// once more with EVAL for the batches that found the script missing.
func RunPipelined(ctx context.Context, b backend.Backend, s backend.Script, batches []Call) []*backend.Cmd {
	cmds := make([]*backend.Cmd, len(batches))
	for i, c := range batches {
		cmds[i] = backend.NewCmd(Line(s, c.Keys, c.Args)...)
	}
	_ = b.Pipeline(ctx, cmds)
	var retry []*backend.Cmd
	for i, c := range cmds {
		if backend.IsNoScript(c.Err()) {
			cmds[i] = backend.NewCmd(EvalLine(s.Source(), c.Args())...)
			retry = append(retry, cmds[i])
		}
	}
	if len(retry) > 0 {
		_ = b.Pipeline(ctx, retry)
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
	QuorumAcquire = backend.NewScript(libLua + "local function rlock_acquire()\n" + acquireLua + "\nend\n" + quorumAcquireLua)
	QuorumEnd     = backend.NewScript(libLua + quorumEndLua)
)

// IsNoScript reports whether err is Redis's NOSCRIPT: the script is not
// loaded (a restart, SCRIPT FLUSH), and EVAL must send its source.
//
// It reads the message of any error (a go-redis one in tests too).
func IsNoScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }
