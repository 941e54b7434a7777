package scripts

import (
	_ "embed"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// The read-write lock's scripts (RWMutex): rwlib.lua after lib.lua, then the
// script.
var (
	//go:embed rwlib.lua
	rwLibLua string
	//go:embed rwacquire.lua
	rwAcquireLua string
	//go:embed rwrelease.lua
	rwReleaseLua string
	//go:embed rwleave.lua
	rwLeaveLua string
	//go:embed rwclaim.lua
	rwClaimLua string
	//go:embed rwrenew.lua
	rwRenewLua string
	//go:embed rwreenter.lua
	rwReenterLua string
	//go:embed rwunreenter.lua
	rwUnreenterLua string
)

var (
	RWAcquire   = backend.NewScript(libLua + rwLibLua + rwAcquireLua)
	RWRelease   = backend.NewScript(libLua + rwLibLua + rwReleaseLua)
	RWLeave     = backend.NewScript(libLua + rwLibLua + rwLeaveLua)
	RWClaim     = backend.NewScript(libLua + rwLibLua + rwClaimLua)
	RWRenew     = backend.NewScript(libLua + rwLibLua + rwRenewLua)
	RWReenter   = backend.NewScript(libLua + rwLibLua + rwReenterLua)
	RWUnreenter = backend.NewScript(libLua + rwLibLua + rwUnreenterLua)
)
