package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned by Launch and LaunchCluster when there is no
// redis-server on PATH. Its text is the single line Start and StartCluster
// fail the test with.
var ErrNotFound = errors.New(`redistest: redis-server not found on PATH; run "make test", which installs it (apt-get install redis-server)`)

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

const (
	// launchAttempts is how many fresh ports Launch tries when another
	// process takes the picked port before redis-server binds it.
	launchAttempts = 5
	// readyTimeout bounds one start of redis-server, until it answers PING:
	// a hang guard (the process is alive meanwhile; a start took over 10s
	// at load 26 on this 2-core machine).
	readyTimeout = time.Minute
	// restartTimeout bounds Restart, including retries while the port is
	// still held by someone else.
	restartTimeout = 90 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 3 * time.Second
	// pollInterval is the period of every readiness poll in this package.
	pollInterval = 10 * time.Millisecond
)

// Config configures a server started with Launch. The zero value is a plain
// standalone server with the defaults described in the package comment.
type Config struct {
	// Args are extra redis.conf directives, one per element, written as a
	// line of the configuration file: "name value", with redis.conf quoting
	// (for example `notify-keyspace-events "Ex"`, `save ""`). They are
	// appended after the defaults, so they can override them; do not
	// override port, bind, dir or the cluster settings.
	Args []string
}

// Server is a redis-server child process. Its methods are safe for
// concurrent use.
type Server struct {
	bin      string
	dir      string
	confPath string
	logPath  string
	args     []string
	kind     nodeKind

	mu      sync.Mutex
	port    int
	busPort int // cluster bus port; 0 for a standalone server
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been reaped
	ending  *atomic.Bool  // cmd is being stopped or killed by this package
	pid     int
	closed  bool
	client  *redis.Client
	clients []*redis.Client
}

// nodeKind is what a Server runs as.
type nodeKind int

const (
	kindStandalone nodeKind = iota
	kindCluster             // cluster-enabled node, with a bus port
	kindSentinel            // redis-server --sentinel
)

// Launch starts a standalone redis-server without a testing.TB. The caller
// must Close it.
func Launch(cfg Config) (*Server, error) {
	return launch(kindStandalone, cfg.Args)
}

// Start launches a standalone redis-server for the test, with args as extra
// redis.conf directive lines (see Config.Args). The server, and every client
// obtained from it, is closed by t.Cleanup; if the test failed, the tail of
// the server's log is printed with t.Log first. If the server cannot be
// started, for instance because redis-server is not installed, the test fails
// immediately.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := launch(kindStandalone, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("redistest: log tail of redis-server %s (pid %d):\n%s", s.Addr(), s.Pid(), s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			t.Errorf("redistest: closing %s: %v", s.Addr(), err)
		}
	})
	return s
}

func launch(kind nodeKind, args []string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotFound
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{
		bin:      bin,
		dir:      dir,
		confPath: filepath.Join(dir, "redis.conf"),
		logPath:  filepath.Join(dir, "redis.log"),
		args:     append([]string(nil), args...),
		kind:     kind,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if err = s.pickPortsLocked(); err == nil {
			if err = s.writeConfLocked(); err == nil {
				err = s.startLocked(readyTimeout)
			}
		}
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == launchAttempts {
			s.closeLocked()
			return nil, err
		}
		s.releasePortsLocked()
	}
}

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrLocked()
}

func (s *Server) addrLocked() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the server's TCP port.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// BusPort returns the cluster bus port of a cluster node, 0 for a standalone
// server.
func (s *Server) BusPort() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busPort
}

// Dir returns the server's working directory (removed by Close).
func (s *Server) Dir() string { return s.dir }

// Pid returns the process id of the running redis-server, or of the last one
// after Stop or Close.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Running reports whether the redis-server process is alive (it may be
// paused).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked()
}

func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// options are the go-redis options of the clients handed out for this server.
func (s *Server) optionsLocked() *redis.Options {
	return &redis.Options{
		Addr:                  s.addrLocked(),
		ContextTimeoutEnabled: true,
	}
}

// Client returns a go-redis *redis.Client for this server, created on first
// use and closed by Close. It survives Stop, Restart and Pause: commands fail
// while the server is down and work again once it is back.
func (s *Server) Client() redis.UniversalClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(s.optionsLocked())
	}
	return s.client
}

// NewClient returns a new go-redis client for this server. The mod functions
// may change the options (Addr and ContextTimeoutEnabled are preset) before
// the client is created. The caller closes it; Close closes it too (closing a
// client twice is harmless), so clients of a server from Start are always
// closed at the end of the test.
func (s *Server) NewClient(mod ...func(*redis.Options)) *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	opt := s.optionsLocked()
	for _, m := range mod {
		m(opt)
	}
	c := redis.NewClient(opt)
	s.clients = append(s.clients, c)
	return c
}

// Stop terminates the redis-server (SIGTERM, then SIGKILL if it has not
// exited after a few seconds) and waits for the process to be reaped. The
// data is lost. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	select {
	case <-s.done:
		return nil // already exited (crashed, or killed by someone else)
	default:
	}
	s.ending.Store(true)
	p := s.cmd.Process
	// SIGCONT so that a paused server handles the SIGTERM.
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Signal(syscall.SIGCONT)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redistest: killing redis-server pid %d: %w", s.pid, err)
	}
	<-s.done
	return nil
}

// Kill kills the redis-server with SIGKILL, a crash: no shutdown, no last
// write reaches the replicas, clients see their connections reset. It waits
// until the process is reaped. The data is lost; Restart brings the server
// back. Killing a stopped server does nothing.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	s.ending.Store(true)
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redistest: killing redis-server pid %d: %w", s.pid, err)
	}
	<-s.done
	return nil
}

// Restart stops the server if it is running and starts it again on the same
// port, with an empty data set (what a test's configuration persisted is
// removed first; [Server.StartAgain] keeps it). A cluster node keeps
// its nodes.conf, so it comes back with the same node ID and rejoins the
// cluster. If the port is briefly unavailable, Restart retries until a
// deadline.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("redistest: Restart of a closed server")
	}
	if err := s.stopLocked(); err != nil {
		return err
	}
	// Nothing should be there with save "" and appendonly no, but make sure
	// the data is gone even if a test enabled persistence.
	_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
	_ = os.RemoveAll(filepath.Join(s.dir, "appendonlydir"))
	return s.startAgainLocked()
}

// StartAgain starts a stopped or killed server again on the same port, in
// the same directory, with the data it persisted: none by default (save "",
// appendonly no), and with "appendonly yes" and "appendfsync always" every
// write it acknowledged, also after [Server.Kill] (a crash: the server
// fsyncs the append-only file before it replies). Expiry times are absolute
// in the persisted data, so a key whose TTL passed while the server was down
// is gone when it is back. Its script cache is empty (EVALSHA answers
// NOSCRIPT until the script is loaded again). StartAgain returns once the
// server answers PING, which it does only after it has loaded its data; it
// retries while the port is briefly taken by someone else, until a deadline.
// StartAgain of a running server does nothing.
func (s *Server) StartAgain() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("redistest: StartAgain of a closed server")
	}
	if s.runningLocked() {
		return nil
	}
	return s.startAgainLocked()
}

// startAgainLocked starts the server on its port, retrying while the port is
// taken, until restartTimeout.
func (s *Server) startAgainLocked() error {
	deadline := time.Now().Add(restartTimeout)
	for {
		err := s.startLocked(readyTimeout)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // retry interval, bounded by deadline
	}
}

// Pause freezes the redis-server with SIGSTOP and waits until the kernel
// reports it stopped. Connections stay open and new ones are accepted by the
// kernel, but no command is answered until Resume.
func (s *Server) Pause() error {
	return s.signal(syscall.SIGSTOP, "T")
}

// Resume continues a paused redis-server with SIGCONT.
func (s *Server) Resume() error {
	return s.signal(syscall.SIGCONT, "")
}

func (s *Server) signal(sig syscall.Signal, wantState string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return fmt.Errorf("redistest: %v to redis-server %s: not running", sig, s.addrLocked())
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redistest: %v to redis-server pid %d: %w", sig, s.pid, err)
	}
	if wantState == "" || procState(s.pid) == "" {
		return nil // nothing to wait for, or no /proc to look at
	}
	deadline := time.Now().Add(5 * time.Second)
	for procState(s.pid) != wantState {
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server pid %d did not reach state %s after %v", s.pid, wantState, sig)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Close closes the clients handed out by Client and NewClient, stops the
// server if it is running, and removes its directory. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *Server) closeLocked() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.client != nil {
		_ = s.client.Close()
	}
	for _, c := range s.clients {
		_ = c.Close() // may have been closed by the caller already
	}
	err := s.stopLocked()
	s.releasePortsLocked()
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("redistest: %w", rerr)
	}
	return err
}

// LogTail returns the last n lines of the server's log (all of it if n <= 0).
// The log holds the output of every start of the server, including the ones
// before a Restart. It is empty after Close.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	return lastLines(string(b), n)
}

func lastLines(text string, n int) string {
	text = strings.TrimRight(text, "\n")
	if n <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *Server) writeConfLocked() error {
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\n", s.port)
	b.WriteString("bind 127.0.0.1\n")
	b.WriteString("protected-mode no\n")
	b.WriteString("daemonize no\n")
	fmt.Fprintf(&b, "dir %s\n", strconv.Quote(s.dir))
	// Log to stdout, which is the log file: that also catches what
	// redis-server prints before it has parsed its configuration.
	b.WriteString("logfile \"\"\n")
	if s.kind != kindSentinel {
		// A sentinel has no data set and rewrites this file itself.
		b.WriteString("save \"\"\n")
		b.WriteString("appendonly no\n")
		// Replicas sync over the socket at once instead of after the
		// default 5 s wait for more replicas.
		b.WriteString("repl-diskless-sync-delay 0\n")
	}
	if s.kind == kindCluster {
		b.WriteString("cluster-enabled yes\n")
		b.WriteString("cluster-config-file nodes.conf\n")
		b.WriteString("cluster-node-timeout 2000\n")
		fmt.Fprintf(&b, "cluster-port %d\n", s.busPort)
	}
	for _, a := range s.args {
		b.WriteString(a)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(s.confPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}

// startLocked starts redis-server and waits until it answers PING.
func (s *Server) startLocked(timeout time.Duration) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	var logStart int64
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(s.bin, s.confPath)
	if s.kind == kindSentinel {
		cmd.Args = append(cmd.Args, "--sentinel")
	}
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	done := make(chan struct{})
	ending := new(atomic.Bool)
	logPath := s.logPath
	go func() {
		err := cmd.Wait() // reap
		if !ending.Load() {
			noteDeath(logPath, cmd.Process.Pid, err)
		}
		close(done)
	}()
	s.cmd, s.done, s.ending, s.pid = cmd, done, ending, cmd.Process.Pid

	addr := s.addrLocked()
	if err := waitReady(addr, s.pid, done, timeout); err != nil {
		// What the process was doing (R, S, D: waiting for the disk, T:
		// stopped), for a start that hangs.
		if st := procState(s.pid); st != "" {
			err = fmt.Errorf("%w (pid %d in state %s)", err, s.pid, st)
		}
		_ = s.stopLocked()
		out := s.logSince(logStart)
		if strings.Contains(out, "Address already in use") {
			err = fmt.Errorf("%w (%v)", errAddrInUse, err)
		}
		return fmt.Errorf("redistest: redis-server %s did not start: %w\n%s", addr, err, lastLines(out, 20))
	}
	return nil
}

// noteDeath appends to the server's log how a redis-server that this
// package did not stop ended: a SIGKILL (the OOM killer, a signal sent to a
// reused pid) leaves no line of its own, and the log tail a failed test
// prints must tell a crash from a kill.
func noteDeath(logPath string, pid int, err error) {
	how := "exit status 0"
	if err != nil {
		how = err.Error()
	}
	f, ferr := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0o644)
	if ferr != nil {
		return // the directory is gone: the server was closed
	}
	defer f.Close()
	fmt.Fprintf(f, "redistest: redis-server pid %d ended, not stopped by redistest: %s (at %s)\n", pid, how, time.Now().Format(time.RFC3339Nano))
}

func (s *Server) logSince(off int64) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}

// waitReady polls addr until the redis-server of process pid answers
// there, or the process exits (done), or timeout passes. The answer must
// come from pid: another process's listener on the port (a fault proxy in
// a test beside, which forwards to its own server, took a port picked here
// before redis-server bound it) answers PING too, and a server that failed
// to bind was taken for started (rueidis.NewClient: EOF in a make test beside
// a make stress).
func waitReady(addr string, pid int, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return errors.New("redis-server exited")
		default:
		}
		err := probe(addr, pid)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer from pid %d after %v: %v", pid, timeout, err)
		}
		select {
		case <-done:
			return errors.New("redis-server exited")
		case <-tick.C:
		}
	}
}

// probe sends PING and INFO server over a fresh connection (a raw one, so
// that the readiness probe starts no client goroutines and needs no client
// options): the server must answer PONG (not LOADING) and be process pid.
func probe(addr string, pid int) error {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING: %s", line) // such as LOADING, which INFO would not say
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	head = strings.TrimSpace(head)
	n, err := strconv.Atoi(strings.TrimPrefix(head, "$"))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return fmt.Errorf("INFO server: %s", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if v != strconv.Itoa(pid) {
				return fmt.Errorf("%s is answered by pid %s, not redis-server pid %d", addr, v, pid)
			}
			return nil
		}
	}
	return fmt.Errorf("INFO server of %s has no process_id", addr)
}

// Ports handed out to servers that are not closed yet, so that a stopped
// server's port is not given to another server before its Restart: in this
// process by the map, and across processes (go test runs a module's
// packages side by side, make test two modules at once) by an exclusive
// flock on a file named after the port, held while the port is reserved.
// Listeners that are not redistest's (a fault proxy's, a test's HTTP
// server) can still take a stopped server's port; then Restart retries
// until its deadline.
var reserved = struct {
	sync.Mutex
	ports map[int]*os.File // the port's lock file; nil where none could be made
}{ports: map[int]*os.File{}}

// portLocks is the folder of the ports' lock files, shared by every process
// of the machine's user.
var portLocks = filepath.Join(os.TempDir(), "rlock-redistest-ports")

func freePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: picking a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		reserved.Lock()
		_, taken := reserved.ports[port]
		if !taken {
			var f *os.File
			if f, taken = lockPort(port); !taken {
				reserved.ports[port] = f
			}
		}
		reserved.Unlock()
		if !taken {
			return port, nil
		}
	}
	return 0, errors.New("redistest: no free port found")
}

// lockPort takes the lock file of port: taken reports that another process
// holds it. Where no lock file can be made (f nil), the port is reserved in
// this process only.
func lockPort(port int) (f *os.File, taken bool) {
	if err := os.MkdirAll(portLocks, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(portLocks, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, true
	}
	return f, false
}

func (s *Server) pickPortsLocked() error {
	p, err := freePort()
	if err != nil {
		return err
	}
	s.port = p
	if s.kind == kindCluster {
		if s.busPort, err = freePort(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) releasePortsLocked() {
	reserved.Lock()
	defer reserved.Unlock()
	for _, p := range []int{s.port, s.busPort} {
		if p != 0 {
			if f := reserved.ports[p]; f != nil {
				f.Close() // and with it the flock
			}
			delete(reserved.ports, p)
		}
	}
}
