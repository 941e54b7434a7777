package main

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfirmTakesYesOnly(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "YES\n": true, "y": true, "n\n": false, "\n": false, "": false, "yes please\n": false} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		_, err = w.WriteString(answer)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		c := &cli{stdin: r, stderr: io.Discard}
		s := &state{name: "n", ttlMS: 1000, holders: []holder{{Field: "c:1", Count: 1}}}
		assert.Equal(t, want, confirm(c, s), "answer %q", answer)
		require.NoError(t, r.Close())
	}
}

func TestAPipeIsNotATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(r))
	assert.False(t, isTerminal(nil))
}
