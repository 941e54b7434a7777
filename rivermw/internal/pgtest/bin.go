package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// ErrNotFound is returned by Launch when neither /usr/lib/postgresql/N/bin
// nor PATH has postgres and initdb. Its text is the line Start fails the test
// with.
var ErrNotFound = errors.New(`pgtest: PostgreSQL's postgres and initdb not found in /usr/lib/postgresql/N/bin or on PATH; run "make test", which installs them (.ci/install-postgres.sh: apt-get install postgresql)`)

// binDir returns the directory of postgres and initdb: the newest
// /usr/lib/postgresql/N/bin that has both, else the directory of postgres on
// PATH when initdb is beside it.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, d := range dirs {
		if hasBins(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil && hasBins(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	return "", ErrNotFound
}

func hasBins(dir string) bool {
	for _, name := range []string{"postgres", "initdb"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// runAs returns the credential that initdb and postgres run with: nil (the
// current user) unless the tests run as root, which PostgreSQL refuses; then
// the system user "postgres" (the Debian package's), else "nobody".
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.Join(append([]error{errors.New("pgtest: running as root, and no unprivileged user (postgres, nobody) to run PostgreSQL as")}, errs...)...)
}
