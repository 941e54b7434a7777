#!/usr/bin/env bash
# Runs go test -race -count=1 in every module given, in two lanes side by
# side: the first module (the root, the largest) in one, the others one
# after another in the other. On a fresh 2-core machine most of make test
# is compiling each module's packages with -race, which a lane leaves one
# core idle for; two lanes keep both busy (docs/reliability.md, "What runs
# where"). Each module's output is printed whole when it ends, under its
# "== go test" line with its time: the other modules' as each ends, the
# first module's last, so the lanes' lines never interleave.
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

# lane MODULE...: tests each module in turn, each one's output into its own
# log, printed when it ends with its time; returns 1 if any failed.
lane() {
	local m out start rc status=0
	for m in "$@"; do
		out="$logs/$(echo "$m" | tr / _).log"
		start=$SECONDS
		(cd "$m" && "$go" test -race -count=1 -timeout 9m ${flags[@]+"${flags[@]}"} ./...) >"$out" 2>&1
		rc=$?
		echo "== go test $m ($((SECONDS - start))s)" >>"$out.done"
		cat "$out" >>"$out.done"
		[ $rc -eq 0 ] || status=1
	done
	return $status
}

# show MODULE...: prints what lane wrote for each module.
show() {
	local m
	for m in "$@"; do
		cat "$logs/$(echo "$m" | tr / _).log.done"
	done
}

flags=("$@")
# Every module's tests import lockmw, the test helpers and their
# dependencies (go-redis, testify): compiled with -race once, here, before
# the lanes start, rather than by both lanes side by side. On emptied
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
lane "${modules[0]}" &
first=$!
status=0
for m in "${modules[@]:1}"; do # the second lane, printed as each module ends
	lane "$m" || status=1
	show "$m"
done
wait "$first" || status=1
show "${modules[0]}"
[ $status -eq 0 ] || echo "FAIL: a module's tests failed (see its == go test section above)"
exit $status
