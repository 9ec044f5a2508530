# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Shared helpers for the integration tests: source it first thing.
#   . "$(dirname "$0")/../lib/lib.sh"
# Gives: guaranteed cleanup (on_exit, run LIFO on exit, error or signal), skip/fail/assert helpers,
# a scratch directory ($T), wait_for, file creation, and slowfs_mount (mount, wait for readiness,
# unmount on exit in one call).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
TEST_NAME=$(basename "$0" .sh)

_cleanups=()
# on_exit CMD...: run CMD (a string, eval'd) when the test ends, last registered first.
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
	local rc=$? i
	set +e
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_cleanups[$i]}" >/dev/null 2>&1
	done
	_cleanups=()
	return $rc
}
trap '_run_cleanups' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
info() { echo "# $*"; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_cmd() { local c; for c; do command -v "$c" >/dev/null 2>&1 || skip "needs $c"; done; }

assert_eq() { [ "$1" == "$2" ] || fail "${3:-assert_eq}: expected '$2', got '$1'"; }
assert_ne() { [ "$1" != "$2" ] || fail "${3:-assert_ne}: did not expect '$2'"; }
assert_le() { [ "$1" -le "$2" ] || fail "${3:-assert_le}: $1 > $2"; }
assert_ge() { [ "$1" -ge "$2" ] || fail "${3:-assert_ge}: $1 < $2"; }
assert_contains() { [[ "$1" == *"$2"* ]] || fail "${3:-assert_contains}: '$2' not in output: $1"; }

# expect_exit CODE CMD...: run CMD, require exit status CODE, keep its combined output in $OUT.
expect_exit() {
	local want=$1 rc=0; shift
	OUT=$("$@" 2>&1) || rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; output: $OUT"
}

# wait_for TIMEOUT_SECONDS CMD...: poll CMD every 20 ms until it succeeds; fail on timeout.
wait_for() {
	local limit=$1 deadline; shift
	deadline=$(($(date +%s%N) + limit * 1000000000))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -lt "$deadline" ] || fail "timed out after ${limit}s waiting for: $*"
		sleep 0.02
	done
}

# now_ms: monotonic-enough wall clock in milliseconds, for elapsed-time assertions.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Scratch directory, removed at exit (after everything mounted below it is unmounted).
T=$(mktemp -d "/tmp/dirahead-$TEST_NAME.XXXXXX")
on_exit "rm -rf '$T'"

# make_files DIR N [PREFIX]: create N empty files PREFIX000001.. in DIR quickly.
make_files() {
	mkdir -p "$1"
	(cd "$1" && seq -f "${3:-f}%06g" 1 "$2" | xargs touch)
}

# drop_caches: make the next metadata access go to the filesystem.
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
