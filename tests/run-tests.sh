#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Runs every test: the cmocka unit binaries (build/tests/unit/test_*), the static checks of the
# code (tests/lint/*.sh) and the integration scripts (tests/integration/*.sh, tests/bpf/*.sh,
# tests/security/*.sh: one attack each).  Exit status 77 means SKIP.  Logs go to
# build/test-logs/ (NAME.log; NAME.diraheadd.log, the daemon's, when NAME failed).  Ends with one line "N passed, N failed, N skipped".
# Usage: tests/run-tests.sh [SUBSTRING...]   (only tests whose name contains one of them)
# Under CI (CI set) a skip counts as a failure: CI runs as root and nothing may skip there.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LOGS=$BUILD/test-logs
TIMEOUT=${TEST_TIMEOUT:-600}
mkdir -p "$LOGS"

tests=()
for t in "$BUILD"/tests/unit/test_* tests/lint/*.sh tests/integration/*.sh tests/bpf/*.sh tests/security/*.sh; do
	[ -e "$t" ] || continue
	case "$t" in *.o|*.d) continue ;; esac
	if [ $# -gt 0 ]; then
		keep=0
		for pat in "$@"; do [[ "$t" == *"$pat"* ]] && keep=1; done
		[ $keep = 1 ] || continue
	fi
	tests+=("$t")
done

passed=0 failed=0 skipped=0
failed_names=()
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	log="$LOGS/$name.log"
	rm -f "$LOGS/$name.diraheadd.log" # (a failing test's daemon log: tests/lib/daemon.sh)
	start=$(date +%s%N)
	timeout -k 10 "$TIMEOUT" "$t" >"$log" 2>&1 </dev/null
	rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 )); secs=$((ms / 1000)).$(( (ms % 1000) / 100 ))
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1)); echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		echo "SKIP $name: $(grep -m1 '^SKIP' "$log" | sed 's/^SKIP:* *//')"
	else
		failed=$((failed + 1)); failed_names+=("$name")
		[ $rc -eq 124 ] && echo "FAIL $name (timed out after ${TIMEOUT}s)" || echo "FAIL $name (exit $rc)"
		tail -n 25 "$log" | sed 's/^/    | /'
		if [ -f "$LOGS/$name.diraheadd.log" ]; then
			echo "    diraheadd's log ends:"
			tail -n 40 "$LOGS/$name.diraheadd.log" | sed 's/^/    | /'
		fi
	fi
done

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ] || exit 1
if [ -n "${CI:-}" ] && [ $skipped -gt 0 ]; then
	echo "CI: skipped tests count as failures (CI runs as root with everything installed)"
	exit 1
fi
[ $passed -gt 0 ] || { echo "no test ran"; exit 1; }
exit 0
