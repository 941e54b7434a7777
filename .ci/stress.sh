#!/usr/bin/env bash
# Runs the whole suite N times in a row (.ci/test.sh over every module of
# the Makefile's MODULES, as make test does, read from make itself so that a
# module added there is covered here) and prints one line per run,
# the failing tests of a red run, and a closing count. Logs stay in a
# temporary folder, named at the end. It sets RLOCK_STRESS=1, which runs
# the tests make test leaves to stress (the crash scenario on rueidis and
# valkey-go workers; docs/reliability.md, "What runs where").
# Usage: .ci/stress.sh N [go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
shift || true
go=${GO:-go}
modules=$(make -s --no-print-directory --eval='stress-print-modules: ; @echo $(MODULES)' stress-print-modules) || {
	echo "stress: cannot read MODULES from the Makefile" >&2
	exit 2
}
[ -n "$modules" ] || { echo "stress: the Makefile's MODULES is empty" >&2; exit 2; }
echo "stress: modules $modules"
export RLOCK_STRESS=1
logs=$(mktemp -d "${TMPDIR:-/tmp}/rlock-stress.XXXXXX")
pass=0
fail=0
for i in $(seq 1 "$n"); do
	start=$(date +%s)
	ok=1
	# shellcheck disable=SC2086 # $modules is a list of words
	GO=$go ./.ci/test.sh $modules -- "$@" >"$logs/run-$i.log" 2>&1 || ok=0
	if [ "$ok" -eq 1 ]; then
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
