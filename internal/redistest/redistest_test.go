package redistest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
)

// TestMain checks, after the tests passed, that no goroutine leaked and that
// no child process is left: every redis-server a test started, sentinels
// included, was stopped and reaped.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if kids := childProcesses(); len(kids) > 0 {
			fmt.Fprintf(os.Stderr, "redistest: child processes outlived the tests:\n%s\n", strings.Join(kids, "\n"))
			code = 1
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// childProcesses lists the processes whose parent is this one, as
// "pid state command line" (Linux; nil elsewhere).
func childProcesses() []string {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	var kids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces.
		i := strings.LastIndexByte(string(st), ')')
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 2 || f[1] != self {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		kids = append(kids, e.Name()+" "+f[0]+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return kids
}

func TestStartSetGet(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 5*time.Second)

	assert.True(t, strings.HasPrefix(s.Addr(), "127.0.0.1:"), s.Addr())
	c := s.Client()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	got, err := c.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
	assert.Same(t, c, s.Client(), "Client is created once")

	// No persistence, loopback only.
	cfg, err := c.ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	assert.Equal(t, "", cfg["save"])
	assert.Equal(t, "no", cfg["appendonly"])
	assert.Equal(t, "127.0.0.1", cfg["bind"])
	assert.Contains(t, s.LogTail(5), "Ready to accept connections")
}

func TestLaunchArgs(t *testing.T) {
	t.Parallel()
	s, err := redistest.Launch(redistest.Config{Args: []string{"maxmemory 12345678", `notify-keyspace-events "Ex"`}})
	require.NoError(t, err)
	defer s.Close()
	ctx := testsupport.CtxFor(t, 5*time.Second)

	cfg, err := s.Client().ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	assert.Equal(t, "12345678", cfg["maxmemory"])
	assert.Equal(t, "xE", cfg["notify-keyspace-events"])
}

func TestNewClient(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 5*time.Second)

	c1 := s.NewClient(func(o *redis.Options) { o.DB = 1 })
	defer c1.Close()
	require.NoError(t, c1.Set(ctx, "k", "db1", 0).Err())
	require.ErrorIs(t, s.Client().Get(ctx, "k").Err(), redis.Nil, "default client uses DB 0")
	// Not closed by the caller: Start's cleanup closes it (goleak checks).
	c2 := s.NewClient()
	require.NoError(t, c2.Ping(ctx).Err())
}

func TestStopRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	ctx := testsupport.CtxFor(t, 20*time.Second)

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	addr, pid := s.Addr(), s.Pid()

	require.NoError(t, s.Stop())
	assert.False(t, s.Running())
	assertGone(t, pid)
	down, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	require.Error(t, c.Get(down, "k").Err(), "server is stopped")
	require.NoError(t, s.Stop(), "Stop twice")

	require.NoError(t, s.Restart())
	assert.Equal(t, addr, s.Addr(), "same port")
	assert.NotEqual(t, pid, s.Pid(), "new process")
	require.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "data gone")
	require.NoError(t, c.Set(ctx, "k", "v2", 0).Err())

	// Restart of a running server.
	pid = s.Pid()
	require.NoError(t, s.Restart())
	assertGone(t, pid)
	require.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "data gone")
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	ctx := testsupport.CtxFor(t, 20*time.Second)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	require.NoError(t, s.Pause())
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Get(short, "k").Err()
	require.Error(t, err, "paused server answers nothing")
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || testsupport.IsTimeout(err), "want a timeout, got %v", err)
	assert.Less(t, time.Since(start), 2*time.Second, "the context deadline bounds the command")

	require.NoError(t, s.Resume())
	got, err := c.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got, "data survives a pause")
}

// Stop on a paused server must not hang.
func TestStopPaused(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	pid := s.Pid()
	require.NoError(t, s.Pause())
	require.NoError(t, s.Stop())
	assertGone(t, pid)
}

func TestKill(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	ctx := testsupport.CtxFor(t, 20*time.Second)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	pid := s.Pid()

	require.NoError(t, s.Kill())
	assert.False(t, s.Running())
	assertGone(t, pid)
	assert.NotContains(t, s.LogTail(5), "ready to exit", "no shutdown: SIGKILL")
	require.NoError(t, s.Kill(), "Kill twice")
	require.NoError(t, s.Stop(), "Stop after Kill")

	require.NoError(t, s.Restart())
	require.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "data gone")

	// A paused server dies too.
	require.NoError(t, s.Pause())
	pid = s.Pid()
	require.NoError(t, s.Kill())
	assertGone(t, pid)
}

// StartAgain after a Kill brings back what an fsync-always append-only
// file holds (every acknowledged write, its absolute expiry kept); without
// persistence, nothing.
func TestStartAgainKeepsPersistedData(t *testing.T) {
	t.Parallel()
	ctx := testsupport.CtxFor(t, 30*time.Second)
	s := redistest.Start(t, "appendonly yes", "appendfsync always")
	c := s.Client()
	require.NoError(t, c.Set(ctx, "kept", "v", 0).Err())
	require.NoError(t, c.Set(ctx, "expiring", "v", time.Hour).Err())
	require.NoError(t, c.Set(ctx, "expired", "v", 300*time.Millisecond).Err())
	require.NoError(t, s.StartAgain(), "StartAgain of a running server does nothing")
	addr, pid := s.Addr(), s.Pid()

	require.NoError(t, s.Kill())
	assertGone(t, pid)
	time.Sleep(400 * time.Millisecond) // down past the short key's TTL: expiry is absolute
	require.NoError(t, s.StartAgain())
	assert.Equal(t, addr, s.Addr(), "same port")
	assert.NotEqual(t, pid, s.Pid(), "new process")
	got, err := c.Get(ctx, "kept").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got, "an acknowledged write survives the crash")
	ttl, err := c.PTTL(ctx, "expiring").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Minute, "the TTL survives")
	require.ErrorIs(t, c.Get(ctx, "expired").Err(), redis.Nil, "a TTL that passed while down has passed")

	plain := redistest.Start(t)
	require.NoError(t, plain.Client().Set(ctx, "k", "v", 0).Err())
	require.NoError(t, plain.Stop())
	require.NoError(t, plain.StartAgain())
	require.ErrorIs(t, plain.Client().Get(ctx, "k").Err(), redis.Nil, "nothing persisted")
}

// A redis-server killed by someone else (here by its pid, as the OOM killer
// or a signal to a reused pid would) has its end in the log tail a failed
// test prints; one that redistest kills or stops has none.
func TestDeathByOthersIsLogged(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	require.NoError(t, s.Kill())
	assert.NotContains(t, s.LogTail(0), "not stopped by redistest", "Kill is no death by others")
	require.NoError(t, s.Restart())
	require.NoError(t, syscall.Kill(s.Pid(), syscall.SIGKILL))
	testsupport.Eventually(t, 20*time.Second, "the server reaped", func() bool { return !s.Running() })
	assert.Contains(t, s.LogTail(1), "not stopped by redistest: signal: killed")
}

func TestCloseKillsProcess(t *testing.T) {
	t.Parallel()
	s, err := redistest.Launch(redistest.Config{})
	require.NoError(t, err)
	pid := s.Pid()
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, 0), "running")
	dir := s.Dir()

	require.NoError(t, s.Close())
	assertGone(t, pid)
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "temp dir removed: %v", err)
	require.NoError(t, s.Close(), "Close is idempotent")
	require.Error(t, s.Restart(), "no Restart after Close")
}

// assertGone checks that no process (not even a zombie) has the pid.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d still exists", pid)
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	assert.True(t, os.IsNotExist(err), "/proc/%d still exists", pid)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	require.Len(t, cl.Masters, 3)
	require.Len(t, cl.Replicas, 3)

	for _, s := range append(cl.Masters, cl.Replicas...) {
		info, err := s.Client().Do(ctx, "CLUSTER", "INFO").Text()
		require.NoError(t, err)
		assert.Contains(t, info, "cluster_state:ok", s.Addr())
		assert.Contains(t, info, "cluster_known_nodes:6", s.Addr())
	}

	c := cl.Client()
	const n = 300
	for i := range n {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err())
	}
	for i := range n {
		got, err := c.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		require.NoError(t, err)
		require.Equal(t, i, got)
	}
	// The keys are spread over all masters.
	for _, m := range cl.Masters {
		size, err := m.Client().DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Greater(t, size, int64(n/6), "keys on %s", m.Addr())
	}

	for i, m := range cl.Masters {
		role, err := m.Client().Do(ctx, "ROLE").Slice()
		require.NoError(t, err)
		require.Equal(t, "master", role[0])
		replicas, ok := role[2].([]any)
		require.True(t, ok, "%#v", role)
		require.Len(t, replicas, 1, "replicas of master %d", i)
		assert.Equal(t, strconv.Itoa(cl.Replicas[i].Port()), replicas[0].([]any)[1])
	}
	for i, r := range cl.Replicas {
		role, err := r.Client().Do(ctx, "ROLE").Slice()
		require.NoError(t, err)
		require.Equal(t, "slave", role[0])
		assert.Equal(t, int64(cl.Masters[i].Port()), role[2])
		assert.Equal(t, "connected", role[3])
		info, err := r.Client().Info(ctx, "replication").Result()
		require.NoError(t, err)
		assert.Contains(t, info, "master_link_status:up")
	}
}

func TestClusterNoReplicas(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 1, 0)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	require.Empty(t, cl.Replicas)
	require.NoError(t, cl.Client().Set(ctx, "k", "v", 0).Err())
	got, err := cl.Client().Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

// fakeTB records Fatal instead of failing the real test.
type fakeTB struct {
	testing.TB
	fatal []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.fatal = append(f.fatal, fmt.Sprint(args...))
	runtime.Goexit()
}

// Not parallel: it changes PATH for the whole process (Go runs the parallel
// tests after the sequential ones).
func TestRedisServerNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())

	_, err := redistest.Launch(redistest.Config{})
	require.ErrorIs(t, err, redistest.ErrNotFound)
	_, err = redistest.LaunchCluster(1, 0)
	require.ErrorIs(t, err, redistest.ErrNotFound)
	_, err = redistest.LaunchSentinel(1, 1)
	require.ErrorIs(t, err, redistest.ErrNotFound)

	const want = `redistest: redis-server not found on PATH; run "make test", which installs it (apt-get install redis-server)`
	for name, start := range map[string]func(testing.TB){
		"Start":         func(tb testing.TB) { redistest.Start(tb) },
		"StartCluster":  func(tb testing.TB) { redistest.StartCluster(tb, 1, 0) },
		"StartSentinel": func(tb testing.TB) { redistest.StartSentinel(tb, 1, 1) },
	} {
		f := &fakeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			start(f)
		}()
		<-done
		assert.Equal(t, []string{want}, f.fatal, name)
	}
}

// No redis-server, sentinels included, outlives a test binary that is
// killed (Pdeathsig).
func TestNoOrphanWhenParentKilled(t *testing.T) {
	if os.Getenv("REDISTEST_ORPHAN_CHILD") == "1" {
		s, err := redistest.Launch(redistest.Config{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		sg, err := redistest.LaunchSentinel(1, 1)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("PIDS", s.Pid(), sg.Master.Pid(), sg.Replicas[0].Pid(), sg.Sentinels[0].Pid())
		time.Sleep(time.Minute) // killed by the parent long before
		os.Exit(1)
	}
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	t.Parallel()
	ctx := testsupport.CtxFor(t, 20*time.Second)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNoOrphanWhenParentKilled$")
	cmd.Env = append(os.Environ(), "REDISTEST_ORPHAN_CHILD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	f := strings.Fields(line)
	require.Len(t, f, 5, "child said %q", line)
	require.Equal(t, "PIDS", f[0], "child said %q", line)
	var pids []int
	for _, p := range f[1:] {
		pid, err := strconv.Atoi(p)
		require.NoError(t, err)
		require.NoError(t, syscall.Kill(pid, 0), "redis-server %d running", pid)
		pids = append(pids, pid)
	}

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	// The kernel kills the redis-servers; they are then reaped by init, or
	// stay zombies if init does not reap (some containers): either way dead.
	for _, pid := range pids {
		for {
			st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("redis-server %d survived its parent: %s", pid, st)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
