package rivermw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/riverqueue/river/rivertype"
)

// DefaultKeyPrefix is the default prefix of the middleware's Redis keys (see
// [WithKeyPrefix]): the default lock of a job is named
// "river:lock:<kind>:<hash>".
const DefaultKeyPrefix = "river:"

// HashLen is the length, in hex digits, of the args hash in [DefaultKey]:
// the first 128 bits of SHA-256.
const HashLen = 32

// DefaultKey is the default key function: the job's kind, ":", and the first
// [HashLen] hex digits of the SHA-256 of its encoded args. Two jobs have the
// same key exactly when (but for a hash collision) they have the same kind
// and args; ids, queues, priorities, tags and metadata play no part. The args
// are hashed as the database hands them back (River's PostgreSQL driver keeps
// them as jsonb, which normalises spacing and key order), so the same args
// give the same key whichever client inserted them.
func DefaultKey(_ context.Context, job *rivertype.JobRow) string {
	sum := sha256.Sum256(job.EncodedArgs)
	return job.Kind + ":" + hex.EncodeToString(sum[:HashLen/2])
}
