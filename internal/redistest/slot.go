package redistest

import "github.com/go-rlock/rlock/internal/keyslot"

// Slot returns the Redis Cluster hash slot of key, 0 to 16383, as CLUSTER
// KEYSLOT answers it (internal/keyslot, the one CRC16 of the repository).
func Slot(key string) int { return keyslot.Of(key) }
