#!/usr/bin/env bash
# Runs the whole suite N times in a row (go test -race -count=1 in the root
# module, in examples/bench, rivermw, grpcmw and connectmw, as make test does) and prints one line per
# run, the failing tests of a red run, and a closing count. Logs stay in a
# temporary folder, named at the end.
# Usage: .ci/stress.sh N [go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
shift || true
go=${GO:-go}
logs=$(mktemp -d "${TMPDIR:-/tmp}/rlock-stress.XXXXXX")
pass=0
fail=0
for i in $(seq 1 "$n"); do
	start=$(date +%s)
	if { "$go" test -race -count=1 -timeout 9m "$@" ./... &&
		(cd examples/bench && "$go" test -race -count=1 -timeout 9m "$@" ./...) &&
		(cd rivermw && "$go" test -race -count=1 -timeout 9m "$@" ./...) &&
		(cd grpcmw && "$go" test -race -count=1 -timeout 9m "$@" ./...) &&
		(cd connectmw && "$go" test -race -count=1 -timeout 9m "$@" ./...); } >"$logs/run-$i.log" 2>&1; then
		pass=$((pass + 1))
		echo "run $i of $n: ok in $(($(date +%s) - start))s"
	else
		fail=$((fail + 1))
		echo "run $i of $n: FAILED in $(($(date +%s) - start))s ($logs/run-$i.log)"
		grep -E '^(--- FAIL|FAIL|panic:)|^\s+--- FAIL' "$logs/run-$i.log" | head -n 20 | sed 's/^/    /'
	fi
done
echo "logs: $logs"
echo "stress: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
