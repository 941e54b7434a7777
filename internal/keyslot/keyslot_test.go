package keyslot_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/internal/keyslot"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"", 0},
		{"123456789", 0x31C3 % 16384}, // the CRC-16/XMODEM check value
		{"foo", 12182},
		{"bar", 5061},
		{"{foo}", 12182},
		{"{foo}.bar", 12182},
		{"x{foo}y{bar}", 12182},              // the first tag counts
		{"foo{}bar", keyslot.Of("foo{}bar")}, // an empty tag hashes the whole key
		{"foo{{bar}}", keyslot.Of("{bar")},   // the tag ends at the first "}"
		{"foo{bar", keyslot.Of("foo{bar")},   // no "}": the whole key
		{"foo}bar{", keyslot.Of("foo}bar{")}, // "}" before "{": the whole key
		{"{user1000}.following", keyslot.Of("{user1000}.followers")},
	} {
		assert.Equal(t, tc.want, keyslot.Of(tc.key), "Of(%q)", tc.key)
	}
	// The cases that compare Of with itself are checked against Redis in
	// TestOfMatchesKeyslot.
	assert.NotEqual(t, keyslot.Of("foo{}bar"), keyslot.Of("{}"), "an empty tag is not a tag")
}

// Of agrees with CLUSTER KEYSLOT.
func TestOfMatchesKeyslot(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 1, 0)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	keys := []string{"", "a", "foo{}bar", "foo{{bar}}", "foo{bar", "foo}bar{", "{}", "{a}{b}", "héllo", "\x00\xff"}
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("lock:%d", i), fmt.Sprintf("{rlock:%d}:channel", i))
	}
	pipe := cl.Masters[0].Client().Pipeline()
	for _, k := range keys {
		pipe.ClusterKeySlot(ctx, k)
	}
	cmds, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for i, k := range keys {
		assert.EqualValues(t, cmds[i].(interface{ Val() int64 }).Val(), keyslot.Of(k), "Of(%q)", k)
	}
}
