package asynqmw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/hibiken/asynq"
)

// DefaultKeyPrefix is the default prefix of the middleware's Redis keys (see
// [WithKeyPrefix]): the default lock of a task is named
// "asynq:lock:<type>:<hash>".
const DefaultKeyPrefix = "asynq:"

// HashLen is the length, in hex digits, of the payload hash in [DefaultKey]:
// the first 128 bits of SHA-256.
const HashLen = 32

// DefaultKey is the default key function: the task type, ":", and the first
// [HashLen] hex digits of the SHA-256 of the payload. Two tasks have the same
// key exactly when (but for a hash collision) they have the same type and
// payload; task IDs, queues and options play no part.
func DefaultKey(_ context.Context, t *asynq.Task) string {
	sum := sha256.Sum256(t.Payload())
	return t.Type() + ":" + hex.EncodeToString(sum[:HashLen/2])
}
