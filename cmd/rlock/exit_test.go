package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passwordServer starts a redis-server that requires the password s3cret.
func passwordServer(t *testing.T) *redistest.Server {
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	require.NoError(t, rdb.ConfigSet(testsupport.Ctx(t), "requirepass", "s3cret").Err())
	return srv
}

func TestFailuresAreOneLineAndExitCode2(t *testing.T) {
	guarded := passwordServer(t)
	bad := testsupport.ClosedAddr(t)
	noScan := redistest.Start(t, `rename-command SCAN ""`) // a server without a command ls needs
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a bad address", []string{"-addr", bad, "show", "x"}, "cannot connect to " + bad},
		{"a bad cluster seed", []string{"-cluster", "-addr", bad, "ls"}, "cannot connect to " + bad},
		{"a wrong password", []string{"-addr", guarded.Addr(), "-password", "nope", "ls"}, "authentication refused"},
		{"no password where one is required", []string{"-addr", guarded.Addr(), "show", "x"}, "authentication refused"},
		{"a server without SCAN", []string{"-addr", noScan.Addr(), "ls"}, "lacks a command rlock needs"},
		{"an unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"a missing name", []string{"show"}, "usage: rlock show NAME"},
		{"an unknown flag", []string{"-nope", "ls"}, "flag provided but not defined: -nope"},
		{"both -addr and -url", []string{"-addr", bad, "-url", "redis://" + bad, "ls"}, "give -addr or -url, not both"},
		{"a bad URL", []string{"-url", "http://x", "ls"}, "-url http://x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			assert.Equal(t, 2, r.code)
			assert.Len(t, lines(r.stderr), 1, "one line: %q", r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "goroutine", "no stack trace")
			assert.Empty(t, r.stdout)
		})
	}
}

func TestTheRightPasswordAndREDIS_URLWork(t *testing.T) {
	guarded := passwordServer(t)
	r := run(t, nil, "-addr", guarded.Addr(), "-password", "s3cret", "show", "x")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "x: not locked")

	cmd := exec.Command(bin, "show", "x")
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+guarded.Addr(), "REDIS_PASSWORD=s3cret")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode(), "REDIS_URL and REDIS_PASSWORD are read: %s", out)
	assert.Equal(t, "rlock: x: not locked", strings.TrimSpace(string(out)))
}

func TestHelpPrintsUsageAndExits0(t *testing.T) {
	r := run(t, nil, "-h")
	assert.Equal(t, 0, r.code)
	for _, cmd := range []string{"ls", "show", "watch", "unlock"} {
		assert.Contains(t, r.stdout, fmt.Sprintf("rlock [connection flags] %s", map[bool]string{true: "", false: "[-json] "}[cmd == "unlock"]+cmd))
	}
}
