package main_test

import (
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShowThroughSentinelFindsTheMaster(t *testing.T) {
	sg := redistest.StartSentinel(t, 1, 1)
	rdb := sg.Client()
	c := newClient(t, rdb)
	m := c.Mutex("sentinel:job")
	hold, err := m.Lock(testsupport.Ctx(t))
	require.NoError(t, err)

	conn := []string{"-sentinel", redistest.SentinelMasterName, "-addr", strings.Join(sg.SentinelAddrs(), ",")}
	s := show(t, conn, "sentinel:job")
	require.Len(t, s.Holders, 1)
	assert.Equal(t, holderOf(t, m), s.Holders[0].Field)
	require.NoError(t, m.Unlock(hold))
}
