#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (postgres, initdb) are installed:
# rivermw's tests start real postgres processes (rivermw/internal/pgtest),
# found in /usr/lib/postgresql/N/bin, where Debian and Ubuntu keep them off
# PATH, or on PATH. Installs them with apt-get on Debian/Ubuntu, as root or
# through sudo; otherwise says what to install and fails.
set -euo pipefail

# have: the binaries are where pgtest looks for them.
have() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		if [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then
			return 0
		fi
	done
	command -v postgres >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1
}

if have; then
	exit 0
fi

# install [sudo]: installs the Debian package, then stops the system cluster
# that the package starts on port 5432 (the tests start their own servers).
install() {
	echo "PostgreSQL (postgres, initdb) not found; installing it with apt-get" >&2
	"$@" apt-get update
	"$@" env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
	"$@" service postgresql stop >/dev/null 2>&1 || "$@" systemctl stop postgresql >/dev/null 2>&1 || true
}

if command -v apt-get >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		install
	elif command -v sudo >/dev/null 2>&1; then
		install sudo
	fi
	if have; then
		exit 0
	fi
fi

echo "PostgreSQL's server (postgres and initdb; CI uses Debian's, PostgreSQL 15) is needed by rivermw's tests and was not found." >&2
echo "Install it, e.g. 'apt-get install postgresql' (Debian/Ubuntu) or 'brew install postgresql' (macOS), then run make test again." >&2
exit 1
