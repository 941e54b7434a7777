#!/usr/bin/env bash
# Makes sure redis-server is on PATH: the tests start real redis-server
# processes (internal/redistest). Installs it with apt-get on Debian/Ubuntu,
# as root or through sudo; otherwise says what to install and fails.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi

# install [sudo]: installs the Debian package, then stops the system server
# that the package starts on port 6379 (the tests do not use it).
install() {
	echo "redis-server not found; installing it with apt-get" >&2
	"$@" apt-get update
	"$@" env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server
	"$@" service redis-server stop >/dev/null 2>&1 || true
}

if command -v apt-get >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		install
	elif command -v sudo >/dev/null 2>&1; then
		install sudo
	fi
	if command -v redis-server >/dev/null 2>&1; then
		exit 0
	fi
fi

echo "redis-server (Redis 7 or later) is needed by the tests and is not on PATH." >&2
echo "Install it, e.g. 'apt-get install redis-server' (Debian/Ubuntu) or 'brew install redis' (macOS), then run make test again." >&2
exit 1
