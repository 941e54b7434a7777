package lockmw

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The quorum's own scripts (see quorumend.go); fence.lua is the quorum's
// too, with the other scripts in scripts.go.
var (
	//go:embed scripts/quorumacquire.lua
	quorumAcquireLua string
	//go:embed scripts/quorumend.lua
	quorumEndLua string
)

var (
	// quorumAcquireScript is acquire.lua as the function rlock_acquire,
	// called by quorumacquire.lua.
	quorumAcquireScript = redis.NewScript(libLua + "local function rlock_acquire()\n" + acquireLua + "\nend\n" + quorumAcquireLua)
	quorumEndScript     = redis.NewScript(libLua + quorumEndLua)
)
