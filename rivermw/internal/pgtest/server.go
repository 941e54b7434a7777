package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// launchAttempts is how many fresh ports Launch tries when another
	// process takes the picked port before postgres binds it.
	launchAttempts = 5
	// initTimeout bounds initdb.
	initTimeout = 2 * time.Minute
	// readyTimeout bounds one start of postgres, until it accepts a
	// connection.
	readyTimeout = time.Minute
	// stopGrace is how long Close waits after SIGINT (fast shutdown) before
	// SIGKILL.
	stopGrace = 10 * time.Second
	// pollInterval is the period of the readiness poll.
	pollInterval = 20 * time.Millisecond
)

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// Server is a postgres child process. Its methods are safe for concurrent
// use.
type Server struct {
	dir     string
	logPath string
	port    int
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been reaped

	template templateOnce // River's migrated template database (river.go)

	mu     sync.Mutex
	closed bool
	dbs    int // databases made by RiverDB, for their names
}

// Start launches a postgres for the test and stops it at t.Cleanup, after
// printing the tail of its log with t.Log if the test failed. If the server
// cannot be started, for instance because PostgreSQL is not installed, the
// test fails at once.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgtest: log tail of postgres on port %d:\n%s", s.port, s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s
}

// Launch starts a postgres without a testing.TB: initdb into a new
// temporary directory, then postgres on a free loopback port, until it
// accepts connections. The caller must Close it.
func Launch() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(cred), "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	if err := s.init(bin, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err = s.start(bin, cred)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == launchAttempts {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// tempBase is where the server's directory is made: the system's temporary
// directory, unless the user of cred cannot reach it (a TMPDIR under root's
// home, say); then /tmp.
func tempBase(cred *syscall.Credential) string {
	if cred == nil {
		return ""
	}
	for d := os.TempDir(); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// init gives the directory to cred's user and runs initdb into dir/data.
func (s *Server) init(bin string, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: giving %s to uid %d: %w", s.dir, cred.Uid, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", filepath.Join(s.dir, "data"), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// start runs postgres on a free port and waits until it accepts a
// connection; errAddrInUse when the port was taken meanwhile.
func (s *Server) start(bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", "",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s.cmd, s.port, s.done = cmd, port, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		_ = s.stop()
		if strings.Contains(s.LogTail(0), "already in use") {
			return fmt.Errorf("pgtest: port %d: %w", port, errAddrInUse)
		}
		return fmt.Errorf("%w\n%s", err, s.LogTail(20))
	}
	return nil
}

// waitReady polls a connection until one succeeds, postgres exits or
// readyTimeout passes.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			err = conn.Close(ctx)
			cancel()
			return err
		}
		cancel()
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres on port %d exited at start", s.port)
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres on port %d not ready after %v: %w", s.port, readyTimeout, err)
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: picking a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL returns the connection string of database db on the server, as the
// superuser "postgres" (trust authentication, no TLS).
func (s *Server) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// LogTail returns the last n lines of the server's log (all of it if n <= 0).
// It is empty after Close.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	lines := strings.SplitAfter(string(b), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// Close stops postgres (a fast shutdown, SIGINT, then SIGKILL after a grace
// period), waits until it is reaped and removes its directory. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stop()
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("pgtest: %w", rerr)
	}
	return err
}

// stop ends the postmaster and waits until it is reaped.
func (s *Server) stop() error {
	p := s.cmd.Process
	_ = p.Signal(syscall.SIGINT)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgtest: killing postgres pid %d: %w", p.Pid, err)
	}
	<-s.done
	return nil
}
