#!/usr/bin/env bash
# Runs go test -race -count=1 in every module given, two at a time: one
# worker starts with the first module (the root, the largest), the other
# with the second, and each then takes the next module not yet started, so
# both cores stay busy to the end (docs/reliability.md, "What runs where").
# Each module's output is printed whole when it ends, under its "== go test"
# line with its time, so two modules' lines never interleave.
# Usage: .ci/test.sh MODULE... [-- go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
modules=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	modules+=("$1")
	shift
done
[ $# -gt 0 ] && shift # the --
[ ${#modules[@]} -gt 0 ] || { echo "test.sh: no modules given" >&2; exit 2; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/rlock-test.XXXXXX")
trap 'rm -rf "$logs"' EXIT

# run MODULE: tests the module into its own log and prints the log whole,
# with its time, when it ends (one module's print at a time); returns its
# go test's status.
run() {
	local m=$1 out start rc
	out="$logs/$(echo "$m" | tr / _).log"
	start=$SECONDS
	(cd "$m" && "$go" test -race -count=1 -timeout 9m ${flags[@]+"${flags[@]}"} ./...) >"$out" 2>&1
	rc=$?
	{
		flock 9
		echo "== go test $m ($((SECONDS - start))s)"
		cat "$out"
	} 9>"$logs/print.lock"
	return $rc
}

# next: prints the next module of the queue and takes it off, or fails
# when the queue is empty.
next() {
	local m
	{
		flock 8
		m=$(head -n 1 "$logs/queue")
		[ -n "$m" ] || return 1
		tail -n +2 "$logs/queue" >"$logs/queue.rest" && mv "$logs/queue.rest" "$logs/queue"
		echo "$m"
	} 8>"$logs/queue.lock"
}

# worker MODULE: tests the module, then every module it takes from the
# queue; returns 1 if any failed.
worker() {
	local m=$1 status=0
	while [ -n "$m" ]; do
		run "$m" || status=1
		m=$(next) || m=
	done
	return $status
}

flags=("$@")
# Every module's tests import lockmw, the test helpers and their
# dependencies (go-redis, testify): compiled with -race once, here, before
# the workers start, rather than by both workers side by side. On emptied
# caches the root's test binaries beside httpmw/ginmw's and echomw's took
# 390 s and 742 CPU-seconds without this, 303 s and 561 with it
# (docs/reliability.md, "What runs where"). A failure here is left to the
# tests to report.
if [ -d "${modules[0]}/lockmw" ]; then
	start=$SECONDS
	(cd "${modules[0]}" && "$go" build -race ./lockmw/... ./internal/testsupport/... ./internal/redistest ./httpmw) >"$logs/prelude.log" 2>&1 ||
		{ echo "== go build -race of the shared packages failed (the tests will say why):"; cat "$logs/prelude.log"; }
	echo "== go build -race of the shared packages ($((SECONDS - start))s)"
fi
printf '%s\n' "${modules[@]:2}" >"$logs/queue"
worker "${modules[0]}" &
first=$!
status=0
[ ${#modules[@]} -lt 2 ] || worker "${modules[1]}" || status=1
wait "$first" || status=1
[ $status -eq 0 ] || echo "FAIL: a module's tests failed (see its == go test section above)"
exit $status
