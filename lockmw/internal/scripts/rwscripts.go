package scripts

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
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
	RWAcquire   = redis.NewScript(libLua + rwLibLua + rwAcquireLua)
	RWRelease   = redis.NewScript(libLua + rwLibLua + rwReleaseLua)
	RWLeave     = redis.NewScript(libLua + rwLibLua + rwLeaveLua)
	RWClaim     = redis.NewScript(libLua + rwLibLua + rwClaimLua)
	RWRenew     = redis.NewScript(libLua + rwLibLua + rwRenewLua)
	RWReenter   = redis.NewScript(libLua + rwLibLua + rwReenterLua)
	RWUnreenter = redis.NewScript(libLua + rwLibLua + rwUnreenterLua)
)
